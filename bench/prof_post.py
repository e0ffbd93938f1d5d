"""Profile approve + post alone (issue 15): import + prepare untimed, then approve + post timed,
with the time per step (approve's own transaction, posting, notifications) and optionally a
cProfile of the slowest sizes. Usage (PostgreSQL only):

    DATABASE_URL=... .venv/bin/python bench/prof_post.py [RUNS] [SIZES] [--profile] [--sql]
"""

import cProfile
import os
import pstats
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
os.environ.setdefault("DEBUG", "1")  # development settings (DEBUG is off by default)

import django  # noqa: E402

django.setup()

import bench_limits as bl  # noqa: E402

_timings = defaultdict(float)


def _wrap(module, name, label):
    original = getattr(module, name)

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _timings[label] += time.perf_counter() - started

    setattr(module, name, timed)


def _instrument():
    from refunds_admin.ledger import posting as ledger
    from refunds_admin.ledger import writers
    from refunds_admin.notifications import services as notes
    from refunds_admin.notifications import staff

    _wrap(ledger, "post_proposal", "post_proposal")
    _wrap(ledger, "_create_job", "  _create_job (lines_summary)")
    _wrap(ledger, "lines_summary", "  lines_summary")
    _wrap(ledger, "book_chunk", "  book_chunk")
    _wrap(writers, "book_chunk", "  book_chunk")
    _wrap(ledger, "_finish", "  _finish")
    _wrap(ledger, "_final_check", "    _final_check")
    _wrap(staff, "dispatch_events", "dispatch_events")
    _wrap(staff, "handle_event", "  handle_event")
    _wrap(staff, "schedule_statements", "    schedule_statements")
    _wrap(notes, "deliver_statements", "deliver_statements")


def _sql_logger(queries):
    def log(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            queries.append((time.perf_counter() - started, sql[:160].replace("\n", " ")))

    return log


def _wal():
    from django.db import connection

    with connection.cursor() as c:
        c.execute(
            "SELECT w.wal_bytes, w.wal_fpi, b.checkpoints_req, b.checkpoints_timed, "
            "b.buffers_backend FROM pg_stat_wal w, pg_stat_bgwriter b"
        )
        return [int(v) for v in c.fetchone()]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = int(args[0]) if args else 3
    sizes = [int(s) for s in (args[1] if len(args) > 1 else "100000,250000").split(",")]
    profile = "--profile" in sys.argv
    sql = "--sql" in sys.argv
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    from refunds_admin.incidents import services as incidents
    from refunds_admin.ledger.models import PostingJob
    from refunds_admin.proposals import services as proposals

    _instrument()
    old = setup_databases(verbosity=0, interactive=False, keepdb=False)
    results = defaultdict(list)
    try:
        users = bl._users()
        for run in range(runs):
            for active in sizes:
                doc = bl._document("ranges", active, external_id=f"PROF-{active}-{run}",
                                   relative_start=True)  # fmt: skip
                import json
                from datetime import timedelta

                raw = json.dumps(doc).encode()
                del doc
                snapshot = incidents.import_snapshot(
                    raw, acting_user=users["bench_support"], source="cli"
                )
                t = snapshot.tournament
                incident = incidents.record_incident(
                    t, failed_at=t.starts_at + timedelta(hours=3, minutes=14),
                    cause="server_crash", description="benchmark",
                    acting_user=users["bench_support"],
                )  # fmt: skip
                incidents.declare_not_resumable(
                    incident, reason="benchmark", acting_user=users["bench_manager"]
                )
                proposal = proposals.prepare_proposal(incident, acting_user=users["bench_support"])
                proposal = proposals.submit_proposal(proposal, acting_user=users["bench_support"])
                with connection.cursor() as c:
                    c.execute("CHECKPOINT")
                _timings.clear()
                queries = []
                wal0 = _wal()
                prof = cProfile.Profile() if profile else None
                started = time.perf_counter()
                with connection.execute_wrapper(_sql_logger(queries)):
                    if prof:
                        prof.enable()
                    proposals.approve_proposal(
                        proposal, acting_user=users["bench_manager2"],
                        fingerprint=proposal.fingerprint,
                    )  # fmt: skip
                    if prof:
                        prof.disable()
                took = time.perf_counter() - started
                wal1 = _wal()
                print("   WAL MB, full-page images, checkpoints req/timed, buffers written by "
                      "backend:", [round((b - a) / 1e6, 1) if i == 0 else b - a
                                   for i, (a, b) in enumerate(zip(wal0, wal1, strict=True))])  # fmt: skip
                chunks = [round(d, 2) for d, q in queries if "WITH chunk" in q]
                print("   chunks:", chunks)
                job = PostingJob.objects.get(proposal=proposal)
                assert job.state == "posted", job.last_error
                results[active].append(took)
                print(f"run {run} {active}: approve + post {took:.2f} s "
                      f"({proposal.lines_count} lines, {job.total} credits)")  # fmt: skip
                for label, s in _timings.items():
                    print(f"   {label:<40} {s:7.2f}")
                sqltime = sum(q[0] for q in queries)
                print(f"   {'SQL total':<40} {sqltime:7.2f} in {len(queries)} statements")
                if sql:
                    for d, q in sorted(queries, reverse=True)[:15]:
                        print(f"     {d:6.2f} {q}")
                if prof:
                    stats = pstats.Stats(prof)
                    stats.sort_stats("cumulative").print_stats(45)
                    stats.sort_stats("tottime").print_stats(20)
        for active in sizes:
            ts = results[active]
            print(f"{active}: min {min(ts):.2f} median {statistics.median(ts):.2f}  {ts}")
        if 100_000 in results and 250_000 in results:
            ratios = [b / s for b, s in zip(results[250_000], results[100_000], strict=True)]
            print(f"250k/100k: min {min(ratios):.2f} median {statistics.median(ratios):.2f} "
                  f"{[round(r, 2) for r in ratios]}")  # fmt: skip
    finally:
        connection.close()
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
