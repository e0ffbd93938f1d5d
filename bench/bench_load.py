"""`make serve` under load (issue 25): 37 staff browsing two 100k-line proposals and 3 API
importers posting snapshots, for 3 minutes; goal p95 <= 250 ms over every page.

    make bench BENCH_ARGS=bench_load                      # 3 minutes
    BENCH_LOAD_SECONDS=60 make bench BENCH_ARGS=bench_load  # a shorter run

Everything is real and set up here, then taken down: a database of its own on the same
PostgreSQL server (DATABASE_URL's name + "_load", dropped and created again), the staff users,
an API client and its token, and the two proposals built through the services (import, incident,
not resumable, prepare, submit); then `make serve` (gunicorn, DEBUG=0) on 127.0.0.1:8765
(BENCH_LOAD_PORT), a Celery worker and beat on REDIS_URL, and locust, headless
(bench/locustfile.py says what the users do). The figures are locust's, with the statistics
reset once every user has signed in (sign-in is not in them).

The floor, in the same run: each page alone (one staff user clicking every 0.05-0.1 s, no
importer, 30 s) before the
load; the table gives each page's p50 alone and its p95 under load beside it, and the server's
CPU per request. The machine's load (`uptime`) is printed before and after: on a shared machine
the same run swings by half.

BENCH_LOAD_STAFF, BENCH_LOAD_IMPORTERS, BENCH_LOAD_LINES (100000), BENCH_LOAD_KEEP=1 (keep the
database), BENCH_LOAD_ALONE_SECONDS (30; 0 skips the floor).
"""

import csv
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from tests.support import servers  # noqa: E402 - the repository's root is put on the path first

OUT = HERE / "out"
PORT = int(os.environ.get("BENCH_LOAD_PORT", "8765"))
SECONDS = int(os.environ.get("BENCH_LOAD_SECONDS", "180"))
ALONE_SECONDS = int(os.environ.get("BENCH_LOAD_ALONE_SECONDS", "30"))
STAFF = int(os.environ.get("BENCH_LOAD_STAFF", "37"))
IMPORTERS = int(os.environ.get("BENCH_LOAD_IMPORTERS", "3"))
LINES = int(os.environ.get("BENCH_LOAD_LINES", "100000"))
LIVE_ENTRIES = 5_000  # each importer's live tournament: 2,000 active + 3,000 eliminated
GOAL_P95_MS = 250
PY = sys.executable


def _load_database_url(url):
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "_load"))


def _recreate_database(url):
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _drop_database(url):
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


def _env(database_url, **extra):
    """The environment of an operator's `make serve` (README "Deploying"), and of its worker."""
    drop = ("DEBUG", "HOST", "PORT", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "CASHIER_URL")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        DATABASE_URL=database_url,
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        WALLET="ledger",
        EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
        EMAIL_FILE_PATH=str(OUT / "load-mail"),
        STATIC_ROOT=str(OUT / "load-static"),
        SITE_URL=f"http://127.0.0.1:{PORT}",
        PYTHONUNBUFFERED="1",
        DJANGO_SETTINGS_MODULE="refunds_admin.settings",
    )
    env.update(extra)
    return env


def _start(args, log_name, env):
    log = open(OUT / log_name, "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    proc.log = log
    return proc


def _stop(proc):
    """End the process group this bench started (make -> gunicorn -> its workers; celery), as
    the tests stop a real server."""
    if proc.poll() is None:
        servers.stop(proc)
    proc.log.close()


def _group_cpu_seconds(pgid):
    """User + system CPU of every live process in the group (the web server's workers)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _wait_healthy(proc, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"make serve exited: see {proc.log.name}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/healthz", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"make serve did not answer on {PORT}: see {proc.log.name}")


def _port_free():
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", PORT)) != 0


def _locust(setup_path, seconds, prefix, *, staff, importers, classes, think=None):
    env = dict(os.environ)
    if think:
        env["BENCH_LOAD_THINK"] = think
    env.update(
        BENCH_LOAD_SETUP=str(setup_path),
        BENCH_LOAD_STAFF=str(staff),
        BENCH_LOAD_IMPORTERS=str(importers),
    )
    users = staff + importers
    args = [
        PY, "-m", "locust", "-f", str(HERE / "locustfile.py"), "--headless",
        "--host", f"http://127.0.0.1:{PORT}", "--users", str(users),
        "--spawn-rate", "10", "--run-time", f"{seconds}s", "--reset-stats",
        "--csv", str(OUT / prefix), "--only-summary", "--loglevel", "WARNING", *classes,
    ]  # fmt: skip
    with open(OUT / f"{prefix}.log", "w") as log:
        subprocess.run(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    with open(OUT / f"{prefix}_stats.csv") as fh:
        rows = {r["Name"]: r for r in csv.DictReader(fh)}
    server_errors = {}
    with open(OUT / f"{prefix}_failures.csv") as fh:
        for r in csv.DictReader(fh):
            if any(f"{code}" in r["Error"] for code in range(500, 505)):
                server_errors[r["Name"]] = server_errors.get(r["Name"], 0) + int(r["Occurrences"])
    return rows, server_errors


def _sign_in(setup, username):
    """The Cookie header of a session signed in with the password, through the sign-in page
    behind the TLS proxy (X-Forwarded-Proto: https), as a browser does it."""
    import re

    import requests

    base = f"http://{setup['host']}"
    https = {"X-Forwarded-Proto": "https"}
    with requests.Session() as session:
        page = session.get(f"{base}/accounts/login/", headers=https, timeout=120)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        cookies = {"csrftoken": page.cookies["csrftoken"]}
        signed_in = session.post(
            f"{base}/accounts/login/",
            data={
                "csrfmiddlewaretoken": token,
                "username": username,
                "password": setup["password"],
            },
            headers={
                **https,
                "Referer": f"https://{setup['host']}/accounts/login/",
                # Secure cookies: requests keeps them for https:// addresses, so they are sent
                # by hand, as the proxy passes them on.
                "Cookie": f"csrftoken={cookies['csrftoken']}",
            },
            allow_redirects=False,
            timeout=120,
        )
        if signed_in.status_code != 302 or "login" in signed_in.headers.get("Location", ""):
            raise RuntimeError(f"{username}: sign-in refused ({signed_in.status_code})")
        cookies.update(signed_in.cookies.get_dict())
        return "; ".join(f"{name}={value}" for name, value in cookies.items())


def _sign_in_everyone(setup):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda name: _sign_in(setup, name), setup["staff"]))


def _uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def bench_load():
    url = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not url.startswith("postgres") or not redis_url:
        print("   needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL): skipped")
        return
    if not _port_free():
        print(f"   port {PORT} is taken (BENCH_LOAD_PORT picks another): skipped")
        return
    OUT.mkdir(exist_ok=True)
    load_url = _load_database_url(url)
    setup_path = OUT / "load-setup.json"
    print(f"   {_uptime()}")
    _recreate_database(load_url)
    procs = []
    try:
        env = _env(load_url)
        started = time.perf_counter()
        subprocess.run(
            [PY, str(HERE / "bench_load.py"), "--setup", str(setup_path)],
            cwd=ROOT,
            env={**env, "DEBUG": "1"},  # manage.py-style set-up: development settings
            check=True,
        )
        print(
            f"   set up in {time.perf_counter() - started:.0f} s (database {urlsplit(load_url).path[1:]})"
        )
        celery = [PY, "-m", "celery", "-A", "refunds_admin"]
        procs.append(_start([*celery, "worker", "-Q", "celery,periodic", "--concurrency=2",
                             "--loglevel=WARNING", "--without-gossip", "--without-mingle",
                             f"--hostname=bench-load-{os.getpid()}@%h"],
                            "load-worker.log", env))  # fmt: skip
        procs.append(
            _start([*celery, "beat", "--loglevel=WARNING",
                    f"--schedule={OUT / 'load-beat-schedule'}"], "load-beat.log", env)
        )  # fmt: skip
        # `make serve` as an operator runs it, without its `install` step (-o install): the
        # bench measures the server, it never installs into the virtualenv.
        serve = _start(
            [
                "make",
                "--no-print-directory",
                "-o",
                "install",
                "serve",
                "HOST=127.0.0.1",
                f"PORT={PORT}",
            ],  # fmt: skip
            "load-serve.log",
            env,
        )
        procs.append(serve)
        _wait_healthy(serve)
        setup = json.loads(setup_path.read_text())
        started = time.perf_counter()
        setup["cookies"] = _sign_in_everyone(setup)
        setup_path.write_text(json.dumps(setup))
        print(
            f"   {len(setup['cookies'])} staff signed in in {time.perf_counter() - started:.0f} s"
        )
        alone = {}
        if ALONE_SECONDS:
            alone, _ = _locust(setup_path, ALONE_SECONDS, "load-alone", staff=1, importers=0,
                               classes=["StaffUser"], think="0.05,0.1")  # fmt: skip
        load_before = os.getloadavg()
        cpu_before = _group_cpu_seconds(serve.pid)
        rows, server_errors = _locust(setup_path, SECONDS, "load", staff=STAFF,
                                      importers=IMPORTERS, classes=[])  # fmt: skip
        cpu = _group_cpu_seconds(serve.pid) - cpu_before
        load_after = os.getloadavg()
        _report(rows, server_errors, alone, cpu, setup, load_before, load_after)
    finally:
        for proc in reversed(procs):
            _stop(proc)
        if os.environ.get("BENCH_LOAD_KEEP") != "1":
            _drop_database(load_url)
        print(f"   {_uptime()}")


def _ms(row, key):
    value = row.get(key) or "0"
    return float(value) if value != "N/A" else 0.0


def _report(rows, server_errors, alone, cpu, setup, load_before, load_after):
    total = rows.pop("Aggregated", None)
    print(
        f"   {STAFF} staff + {IMPORTERS} API importers, {SECONDS} s after every user signed in; "
        f"two proposals of {setup['proposals'][0]['lines']:,} lines; "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after (1 min)"
    )
    print(
        f"   {'page':<50} {'req':>6} {'req/s':>6} {'p50':>6} {'p95':>6} {'p99':>6} "
        f"{'errors':>6} {'5xx':>4} {'alone p50':>9}"
    )
    for name, row in sorted(rows.items(), key=lambda kv: -_ms(kv[1], "Request Count")):
        alone_row = alone.get(name)
        print(
            f"   {name[:50]:<50} {int(_ms(row, 'Request Count')):>6} "
            f"{_ms(row, 'Requests/s'):>6.1f} {_ms(row, '50%'):>6.0f} {_ms(row, '95%'):>6.0f} "
            f"{_ms(row, '99%'):>6.0f} {int(_ms(row, 'Failure Count')):>6} "
            f"{server_errors.get(name, 0):>4} "
            + (f"{_ms(alone_row, '50%'):>9.0f}" if alone_row else f"{'-':>9}")
        )
    if total is None:
        print("   no request was made: see bench/out/load.log")
        return
    count = _ms(total, "Request Count")
    p95 = _ms(total, "95%")
    verdict = "ok" if p95 <= GOAL_P95_MS else "OVER GOAL"
    print(
        f"   {'all':<50} {int(count):>6} {_ms(total, 'Requests/s'):>6.1f} "
        f"{_ms(total, '50%'):>6.0f} {p95:>6.0f} {_ms(total, '99%'):>6.0f} "
        f"{int(_ms(total, 'Failure Count')):>6} {sum(server_errors.values()):>4}"
    )
    print(
        f"   overall p95 {p95:.0f} ms; goal {GOAL_P95_MS} ms: {verdict}. Server (gunicorn) CPU "
        f"{cpu:.0f} s, {1000 * cpu / max(count, 1):.0f} ms per request (times in ms)"
    )


# --------------------------------------------------------------------------------------------
# Set-up, in a process of its own on the load database: everything through the services
# --------------------------------------------------------------------------------------------


def _setup(path):
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from datetime import timedelta

    import orjson
    from bench_limits import _document
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.utils import timezone
    from gen_snapshot import make_snapshot

    from refunds_admin.incidents import services as incidents
    from refunds_admin.proposals import services as proposals
    from refunds_admin.tournaments.services import create_api_client

    call_command("migrate", verbosity=0)
    support_group = Group.objects.get(name="support")
    password = secrets.token_urlsafe(16)
    hashed = make_password(password)  # one hash for all: the default hasher costs ~0.5 s each
    staff = [f"load-staff-{i:02d}" for i in range(1, STAFF + 1)]
    User.objects.bulk_create([User(username=name, password=hashed) for name in staff])
    support_group.user_set.add(*User.objects.filter(username__in=staff))
    preparer = User.objects.create_user("load-preparer", password=password)
    preparer.groups.add(support_group)
    manager = User.objects.create_user("load-manager", password=password)
    manager.groups.add(Group.objects.get(name="manager"))
    platform = User.objects.create_user("load-platform", password=password)
    platform.groups.add(support_group)
    _, token = create_api_client("load-platform", user=platform)

    made = []
    for n in (1, 2):
        # LINES lines: the bench's easy snapshot has a fifth as many eliminated entries as active.
        doc = _document("ranges", LINES * 5 // 6, external_id=f"LOAD-{n}", relative_start=True)
        snapshot = incidents.import_snapshot(orjson.dumps(doc), acting_user=preparer, source="cli")
        tournament = snapshot.tournament
        incident = incidents.record_incident(
            tournament, failed_at=tournament.starts_at + timedelta(hours=3, minutes=14),
            cause="server_crash", description="load bench", acting_user=preparer,
        )  # fmt: skip
        incidents.declare_not_resumable(incident, reason="load bench", acting_user=manager)
        proposal = proposals.prepare_proposal(incident, acting_user=preparer)
        proposal = proposals.submit_proposal(proposal, acting_user=preparer)
        made.append(
            {"id": proposal.pk, "tournament_id": tournament.pk, "lines": proposal.lines_count}
        )
    live = []
    for n in range(1, IMPORTERS + 1):
        doc = make_snapshot(2_000, LIVE_ENTRIES - 2_000, external_id=f"LOAD-LIVE-{n}", seed=n)
        doc.pop("incident")
        started_at = timezone.now() - timedelta(hours=1)
        doc["tournament"]["starts_at"] = started_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        live_path = OUT / f"load-live-{n}.json"
        live_path.write_bytes(orjson.dumps(doc))
        live.append(str(live_path))
    path.write_text(
        json.dumps(
            {
                "host": f"127.0.0.1:{PORT}",
                "staff": staff,
                "password": password,
                "token": token,
                "proposals": made,
                "live_snapshots": live,
            }
        )
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--setup"]:
        _setup(Path(sys.argv[2]))
    else:
        bench_load()
