"""Server time of the browser app's heaviest pages on a 100k-line proposal (issue 5 goals:
any breakdown page, with a search, <= 50 ms; dashboard <= 100 ms).

Runs in a throw-away test database (test_<name>), with the 100k lines written by COPY. Times are
Django test Client round trips (URL routing, middleware, queries, template), best and median of
RUNS, after one warm-up request.
"""

import os
import statistics
import time

import orjson

LINES = int(os.environ.get("BENCH_UI_LINES", "100000"))  # 250000: pages must not grow
RUNS = 9


def _setup_database():
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
    os.environ.setdefault("DEBUG", "1")  # development settings (DEBUG is off by default)
    django.setup()
    from django.conf import settings
    from django.db import connection

    # Not setup_test_environment(): its instrumented template rendering would slow every page
    # down; the test Client only needs its host allowed.
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    return connection, old_name


def _make_proposal():
    """A submitted proposal of LINES lines, built the way staff build one: import the snapshot,
    record the incident, declare it not resumable, prepare, submit (all through the services)."""
    from datetime import timedelta

    from bench_limits import _document
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from refunds_admin.incidents import services as incidents
    from refunds_admin.proposals import services as proposals

    support = User.objects.create_user("bench_support", password="x")
    support.groups.add(Group.objects.get(name="support"))
    manager = User.objects.create_user("bench_manager", password="x")
    manager.groups.add(Group.objects.get(name="manager"))
    # LINES lines: the bench's easy snapshot has a fifth as many eliminated entries as active.
    doc = _document("ranges", LINES * 5 // 6, external_id="BENCH-UI", relative_start=True)
    started = time.perf_counter()
    snapshot = incidents.import_snapshot(orjson.dumps(doc), acting_user=support, source="cli")
    tournament = snapshot.tournament
    incident = incidents.record_incident(
        tournament, failed_at=tournament.starts_at + timedelta(hours=3, minutes=14),
        cause="server_crash", description="benchmark", acting_user=support,
    )  # fmt: skip
    incidents.declare_not_resumable(incident, reason="benchmark", acting_user=manager)
    proposal = proposals.prepare_proposal(incident, acting_user=support)
    proposal = proposals.submit_proposal(proposal, acting_user=support)
    print(
        f"   imported and prepared {proposal.lines_count:,} lines in "
        f"{time.perf_counter() - started:.2f} s ({connection.vendor})"
    )
    return proposal, manager


def _time(client, url, runs=RUNS):
    response = client.get(url)  # warm-up (and a check that the page works)
    assert response.status_code == 200, (url, response.status_code)
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    return min(timings), statistics.median(timings)


def bench_ui():
    connection, old_name = _setup_database()
    try:
        from django.test import Client

        proposal, manager = _make_proposal()
        client = Client()
        client.force_login(manager)
        base = f"/proposals/{proposal.pk}/"
        tournament_id = proposal.incident.tournament_id
        cases = [
            ("breakdown, first page", base, 50),
            ("breakdown, last page (keyset)", base + "?last=1", 50),
            ("breakdown, page after line 50,000", base + "?after=50000", 50),
            ("breakdown, sorted by total, last page", base + "?sort=total&last=1", 50),
            ("breakdown, sorted by chips, next page", base + "?sort=chips&after=150000.2", 50),
            ("breakdown, sorted by chips descending", base + "?sort=-chips", 50),
            ("breakdown, search by player id", base + "?q=p0054321", 50),
            ("breakdown, search by entry id", base + "?q=e0054321", 50),
            ("breakdown, search by screen name", base + "?q=player9999", 50),
            (
                "breakdown, eliminated only, page after line 50,000",
                base + "?show=eliminated&after=50000",
                50,
            ),
            ("breakdown, search with no match", base + "?q=nobody", 50),
            ("breakdown, capped only, last page", base + "?show=capped&last=1", 50),
            ("breakdown rows only (htmx partial)", base + "?after=70000", 50),
            ("approval page (incident, rule, money, top 10)", base + "approval/", 50),
            ("proposals worklist, submitted", "/proposals/", 50),
            ("incidents worklist, cancelled", "/incidents/?status=cancelled", 50),
            ("tournaments list with status", "/tournaments/", 50),
            ("tournament page (versions, prizes, entries)", f"/tournaments/{tournament_id}/", 50),
            ("dashboard", "/", 100),
        ]
        for label, url, goal in cases:
            headers = (
                {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "lines"} if "htmx" in label else {}
            )
            if headers:
                client.defaults.update(headers)
            best, median = _time(client, url)
            for key in headers:
                client.defaults.pop(key)
            verdict = "ok" if best <= goal else "OVER GOAL"
            print(
                f"   {label:<46} best {best:6.1f} ms, median {median:6.1f} ms; goal {goal} ms: {verdict}"
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    bench_ui()
