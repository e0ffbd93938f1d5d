"""Issue 25: where an import's and a prepare's time goes, statement by statement, on PostgreSQL.

For each shape of bench_limits (BENCH_SHAPES, BENCH_SIZES as there; one run) it prints the
floors of bench_limits, then the import, the prepare and preparing again (as bench_limits times
them): wall seconds, CPU seconds of this process and of its PostgreSQL backend (read from
/proc/PID/stat, so PostgreSQL must run on this machine), and the same for the COPY and for
each index statement and the ANALYZE of the new partition. The statements are run one after
the other here, and `meanwhile` (the Python work that normally overlaps them) after them, so
that each is timed alone; the totals are therefore a little longer than in bench_limits. Parallel index workers' CPU is not in the backend's.
BENCH_CPROFILE=N also prints the N top functions of cProfile for each import and prepare (by cumulative
time; BENCH_CPROFILE_SORT=tottime by their own). Runs in a throwaway test database, as
bench_limits does.
"""

import json
import os
import re
import resource
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


_NAMES = re.compile(
    r"^(CREATE (UNIQUE )?INDEX \S+ ON \S+ (USING btree )?|ALTER TABLE \S+ ADD CONSTRAINT \S+ )"
)


def _label(sql):
    """An index statement without the generated names: what it builds."""
    what = _NAMES.sub("", sql).replace("::text", "")
    return ("unique " if "UNIQUE" in sql[:20] else "") + what[:56]


def _profiled(what, call, *args, **kwargs):
    """`call(*args, **kwargs)`, under cProfile when BENCH_CPROFILE is set (its top functions,
    by BENCH_CPROFILE_SORT, are printed after the step; the step's own figures then include
    cProfile's overhead)."""
    if not os.environ.get("BENCH_CPROFILE"):
        return call(*args, **kwargs)
    import cProfile
    import pstats

    profile = cProfile.Profile()
    try:
        return profile.runcall(call, *args, **kwargs)
    finally:
        print(f"   cProfile of {what}:")
        order = os.environ.get("BENCH_CPROFILE_SORT", "cumulative")
        stats = pstats.Stats(profile, stream=sys.stdout).sort_stats(order)
        stats.print_stats(int(os.environ["BENCH_CPROFILE"]))


def main():
    import django

    django.setup()
    import bench_limits as limits
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    from refunds_admin.db import partitions

    old = setup_databases(verbosity=0, interactive=False, keepdb=False)
    try:
        pids = []

        def backend_cpu():
            if not pids:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    pids.append(cursor.fetchone()[0])
            with open(f"/proc/{pids[0]}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        def cpu():
            usage = resource.getrusage(resource.RUSAGE_SELF)
            return usage.ru_utime + usage.ru_stime

        steps = []

        def timed(label, call):
            wall, mine, pg = time.perf_counter(), cpu(), backend_cpu()
            result = call()
            steps.append((label, time.perf_counter() - wall, cpu() - mine, backend_cpu() - pg))
            return result

        copy_binary = partitions.copy_binary
        partitions.copy_binary = lambda *a, **k: timed("COPY", lambda: copy_binary(*a, **k))

        def one_by_one(statements, meanwhile):
            pg = connection.connection
            for sql in statements:
                timed(_label(sql), lambda sql=sql: pg.execute(sql))
            return timed("meanwhile (Python; overlapped in the app)", meanwhile or (lambda: None))

        partitions._execute_meanwhile = one_by_one

        from refunds_admin.incidents import services as incidents
        from refunds_admin.proposals import services as proposals
        from refunds_admin.proposals.models import PayoutLine
        from refunds_admin.tournaments import services as tournaments
        from refunds_admin.tournaments.models import Entry

        users = limits._users()
        print(f"   {'what':<58} {'wall s':>7} {'CPU s':>6} {'PG CPU s':>8}")
        for kind in limits.KINDS:
            for active in limits.SIZES:
                doc = limits._document(kind, active, external_id=f"PROFILE-{kind}-{active}",
                                       relative_start=True)  # fmt: skip
                raw = json.dumps(doc).encode()
                del doc
                print(f"   {kind}, {active // 1000}k")
                for label, table, columns, rows, loads in (
                    ("floor: json + COPY of 4 entry columns", Entry, limits._ENTRY_COLUMNS,
                     limits._entry_rows, json.loads),
                    ("floor: orjson + COPY of 11-col rows", PayoutLine, limits._LINE_COLUMNS,
                     limits._line_rows, None),
                ):  # fmt: skip
                    pg = backend_cpu()
                    wall, mine = limits._copy_floor(raw, table._meta.db_table, columns, rows, loads)
                    print(f"   {label:<58} {wall:7.2f} {mine:6.2f} {backend_cpu() - pg:8.2f}")
                for what in ("import", "prepare", "prepare again"):
                    steps.clear()
                    if what == "import":
                        snapshot = timed(what, lambda raw=raw, what=what: _profiled(
                            what, incidents.import_snapshot, raw,
                            acting_user=users["bench_support"], source="cli"))  # fmt: skip
                        t = snapshot.tournament
                        incident = incidents.record_incident(
                            t, failed_at=t.starts_at + timedelta(hours=3, minutes=14),
                            cause="server_crash", description="profile",
                            acting_user=users["bench_support"],
                        )  # fmt: skip
                        incidents.declare_not_resumable(
                            incident, reason="profile", acting_user=users["bench_manager"]
                        )
                        tournaments._PARSED.clear()
                    else:
                        timed(what, lambda incident=incident, what=what: _profiled(
                            what, proposals.prepare_proposal, incident,
                            acting_user=users["bench_support"]))  # fmt: skip
                    total = steps.pop()
                    for label, wall, mine, pg in [total, *steps]:
                        indent = "" if label == what else "  "
                        print(f"   {indent + label:<58} {wall:7.2f} {mine:6.2f} {pg:8.2f}")
    finally:
        connection.close()
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
    os.environ.setdefault("DEBUG", "1")
    main()
