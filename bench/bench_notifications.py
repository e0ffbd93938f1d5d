"""Statements and the finance report, on PostgreSQL, each in a throwaway database.

- bench_statements_100k: a 100k-entry proposal imported, prepared, approved and posted through
  the services; then its 100k player statements are scheduled (the outbox) and sent to a
  loopback webhook (bench/loopback_webhook.py, another process) with bounded concurrency.
  Goal (issue 14): sending <= 60 s. BENCH_STATEMENTS=N sends N instead (the goal scaled).
- bench_finance_report: 1,000 posted incidents over twelve months and BENCH_REPORT_CREDITS
  ledger credits (default 5,000,000; set a smaller number on a busy machine); the report over
  the whole year, five runs. Goal <= 300 ms. The report reads the per-posting summary rows
  that posting writes in its own transaction, so the credits' number does not enter its cost.
"""

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import django
from django.conf import settings
from django.db import connection
from django.test.utils import setup_databases, teardown_databases
from gen_snapshot import make_snapshot

HERE = Path(__file__).resolve().parent
# BENCH_STATEMENTS: fewer players on a machine too busy for 100k in one sitting.
PLAYERS = int(os.environ.get("BENCH_STATEMENTS", "100000"))
GOAL_SEND = 60.0
GOAL_REPORT_MS = 300.0


def _postgres():
    django.setup()
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        print("   skipped: needs PostgreSQL (set DATABASE_URL=postgres://...)")
        return False
    return True


def _users():
    from django.contrib.auth.models import Group, User

    users = {}
    for name, role in (
        ("bench_support", "support"),
        ("bench_manager", "manager"),
        ("bench_manager2", "manager2"),
    ):
        user, _ = User.objects.get_or_create(username=name)
        user.groups.add(Group.objects.get_or_create(name=role.rstrip("2"))[0])
        users[role] = user
    return users


def _start_webhook():
    port_file = Path(tempfile.mkstemp(prefix="webhook-port-")[1])
    port_file.write_text("")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "loopback_webhook.py"), str(port_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 10
    while not port_file.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc, int(port_file.read_text())


_NOTIFY_SETTINGS = ("NOTIFY_URL", "NOTIFY_TOKEN", "STATEMENT_CHANNEL")


def bench_statements_100k():
    if not _postgres():
        return
    from refunds_admin.celery import app
    from refunds_admin.incidents import services as incidents
    from refunds_admin.notifications import services as notifications
    from refunds_admin.notifications.models import StatementJob, StatementMessage
    from refunds_admin.proposals import services as proposals

    old = setup_databases(verbosity=0, interactive=False, keepdb=False)
    webhook = None
    # Put back at the end, so that a bench run after this one in the same process
    # (`bench/run.py all`) does not send its own notices to this bench's stopped webhook.
    saved = {name: getattr(settings, name) for name in _NOTIFY_SETTINGS}
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True  # posting runs in-process here; it is benched elsewhere
    kick = notifications.kick_statements
    notifications.kick_statements = lambda proposal_id: None  # the bench runs delivery itself
    try:
        users = _users()
        doc = make_snapshot(PLAYERS, external_id=f"BENCH-STATEMENTS-{PLAYERS}")
        doc.pop("incident")
        doc["tournament"]["starts_at"] = (datetime.now(UTC) - timedelta(hours=4)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        snapshot = incidents.import_snapshot(
            json.dumps(doc).encode(), acting_user=users["support"], source="cli"
        )
        tournament = snapshot.tournament
        incident = incidents.record_incident(
            tournament,
            failed_at=tournament.starts_at + timedelta(hours=3, minutes=14),
            cause="server_crash",
            description="benchmark",
            acting_user=users["support"],
        )
        # Four eyes: the manager who declared the tournament not resumable does not approve.
        incidents.declare_not_resumable(incident, reason="benchmark", acting_user=users["manager2"])
        proposal = proposals.prepare_proposal(incident, acting_user=users["support"])
        proposal = proposals.submit_proposal(proposal, acting_user=users["support"])
        webhook, port = _start_webhook()
        settings.NOTIFY_URL = f"http://127.0.0.1:{port}/hooks"
        settings.NOTIFY_TOKEN = "bench"
        settings.STATEMENT_CHANNEL = "webhook"
        # Approval commits -> posting (in-process) -> ledger.posted -> the outbox is written.
        proposals.approve_proposal(
            proposal, acting_user=users["manager"], fingerprint=proposal.fingerprint
        )
        job = StatementJob.objects.get(proposal=proposal)
        print(
            f"   posted {proposal.lines_count:,} lines; outbox: {job.total:,} statements to "
            f"{settings.NOTIFY_URL}, concurrency {settings.NOTIFY_CONCURRENCY}, "
            f"batches of {settings.NOTIFY_BATCH_SIZE}",
            flush=True,
        )
        load_before = os.getloadavg()[0]
        started, cpu = time.perf_counter(), time.process_time()
        state = notifications.deliver_statements(proposal.pk)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        sent = StatementMessage.objects.filter(
            proposal=proposal, state=StatementMessage.State.SENT
        ).count()
        webhook.send_signal(signal.SIGTERM)
        out, _ = webhook.communicate(timeout=30)
        webhook = None
        goal = GOAL_SEND * PLAYERS / 100_000
        verdict = "OK" if elapsed <= goal else "OVER GOAL"
        print(f"   deliver_statements: {state}, {sent:,} sent; webhook: {out.strip()}")
        print(
            f"   sending {sent:,} statements: {elapsed:.1f} s ({sent / elapsed:,.0f}/s; "
            f"goal <= {goal:.0f} s) {verdict}",
            flush=True,
        )
        print(
            f"   sender CPU {cpu:.1f} s; machine load average {load_before:.1f} before, "
            f"{os.getloadavg()[0]:.1f} after (2 cores, shared)",
            flush=True,
        )
    finally:
        notifications.kick_statements = kick
        for name, value in saved.items():
            setattr(settings, name, value)
        app.conf.task_always_eager = eager
        if webhook is not None:
            webhook.kill()
        connection.close()
        teardown_databases(old, verbosity=0)


def bench_finance_report():
    if not _postgres():
        return
    credits = int(os.environ.get("BENCH_REPORT_CREDITS", "5000000"))
    old = setup_databases(verbosity=0, interactive=False, keepdb=False)
    try:
        started = time.perf_counter()
        _fill_report_data(incidents=1_000, credits=credits)
        print(
            f"   data: 1,000 posted incidents over 12 months, {credits:,} credits "
            f"(generated in {time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        from refunds_admin.reports import selectors

        today = datetime.now(UTC).date()
        start = today - timedelta(days=365)
        timings = []
        for _ in range(5):
            t0 = time.perf_counter()
            report = selectors.finance_report(start, today)
            selectors.postings(start, today)
            timings.append((time.perf_counter() - t0) * 1000)
        ms = statistics.median(timings)
        total = sum(t["cents"] for t in report["totals"])
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(sum(amount_cents), 0) FROM ledger_credit")
            ledger = cursor.fetchone()[0]
        verdict = "OK" if ms <= GOAL_REPORT_MS else "OVER GOAL"
        print(
            f"   finance report, 12 months ({len(report['rows'])} rows): median {ms:.0f} ms of "
            f"5 runs (goal <= {GOAL_REPORT_MS:.0f} ms) {verdict}; totals {total} = ledger "
            f"{ledger}: {'equal' if total == ledger else 'DIFFERENT'}",
            flush=True,
        )
    finally:
        connection.close()
        teardown_databases(old, verbosity=0)


def _fill_report_data(*, incidents, credits):
    """1,000 tournaments, incidents and posted proposals (rows written directly: a benchmark's
    fixture), their credits generated in the database, and each posting's summary row from
    those credits, as the posting job writes it."""
    from django.contrib.auth.models import User

    from refunds_admin.incidents.models import Incident
    from refunds_admin.ledger.models import PostedTotal
    from refunds_admin.policies.services import version_for_snapshot
    from refunds_admin.proposals.models import PayoutProposal
    from refunds_admin.tournaments.models import Snapshot, Tournament

    users = _users()
    preparer, approver = users["support"], users["manager"]
    assert isinstance(preparer, User)
    now = datetime.now(UTC)
    policy = version_for_snapshot(None)  # the default policy's current version
    causes = [c for c, _ in Incident.Cause.choices]
    rules = ["full_refund", "not_in_the_money", "in_the_money"]
    tournaments = Tournament.objects.bulk_create(
        Tournament(
            external_id=f"BR-{i:05d}",
            name=f"Report bench {i}",
            currency="USD" if i % 5 else "EUR",
            buy_in_cents=1000,
            fee_cents=100,
            starts_at=now - timedelta(days=360 * i / incidents, hours=2),
            policy_version=policy,
        )
        for i in range(incidents)
    )
    snapshots = Snapshot.objects.bulk_create(
        Snapshot(
            tournament=t, version=1, document_zlib=zlib.compress(b"{}"), sha256="0" * 64, source="demo",
            entries_count=0, active_count=0,
        )
        for t in tournaments
    )  # fmt: skip
    incident_rows = Incident.objects.bulk_create(
        Incident(
            tournament=t,
            status=Incident.Status.CANCELLED,
            failed_at=t.starts_at + timedelta(hours=1),
            cause=causes[i % len(causes)],
            recorded_by=preparer,
            rule=rules[i % 3],
        )
        for i, t in enumerate(tournaments)
    )
    proposals = PayoutProposal.objects.bulk_create(
        PayoutProposal(
            incident=inc, snapshot=s, version=1, status="posted", rule=inc.rule,
            currency=t.currency, failed_at=inc.failed_at, site_wide_issue=False, summary={},
            fingerprint="f" * 64, approved_fingerprint="f" * 64, total_cents=0, lines_count=0,
            prepared_by=preparer, prepared_at=now, approved_by=approver, approved_at=now,
            policy_version=policy, policy_id=policy.policy_id,
            policy_version_number=policy.version, policy_sha256=policy.sha256, wallet="ledger",
        )
        for t, s, inc in zip(tournaments, snapshots, incident_rows)
    )  # fmt: skip
    per = credits // incidents
    components = ["buy_in_refund", "next_prize", "chip_equity", "fee_refund"]
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE ledger_credit DISABLE TRIGGER USER")
        for n, p in enumerate(proposals):
            cursor.execute(
                """INSERT INTO ledger_credit
                   (key, proposal_id, entry_id, component, player_id, currency, amount_cents,
                    created_at)
                   SELECT 'proposal-' || %(p)s || '/e' || g || '/' || %(c)s, %(p)s, 'e' || g,
                          %(c)s, 'p' || (g %% %(players)s), %(cur)s, 100 + (g * 7919) %% 50000,
                          now()
                   FROM generate_series(1, %(n)s) g""",
                {
                    "p": p.pk,
                    "c": components[n % 4],
                    "players": max(1, per // 2),
                    "cur": p.currency,
                    "n": per,
                },
            )
        cursor.execute("ALTER TABLE ledger_credit ENABLE TRIGGER USER")
        # Each credit's line (the posted totals' components are summed from the lines).
        cursor.execute("ALTER TABLE proposals_payoutline DISABLE TRIGGER USER")
        for n, p in enumerate(proposals):
            amounts = {c: "0" for c in components}
            amounts[components[n % 4]] = "100 + (g * 7919) %% 50000"
            cursor.execute(
                f"""INSERT INTO proposals_payoutline
                   (proposal_id, position, entry_id, player_id, status, chips,
                    buy_in_refund_cents, next_prize_cents, chip_equity_cents, fee_refund_cents,
                    total_cents, capped)
                   SELECT %(p)s, g - 1, 'e' || g, 'p' || (g %% %(players)s), 'active', 1,
                          {amounts["buy_in_refund"]}, {amounts["next_prize"]},
                          {amounts["chip_equity"]}, {amounts["fee_refund"]},
                          100 + (g * 7919) %% 50000, false
                   FROM generate_series(1, %(n)s) g""",
                {"p": p.pk, "players": max(1, per // 2), "n": per},
            )
        cursor.execute("ALTER TABLE proposals_payoutline ENABLE TRIGGER USER")
        cursor.execute("ANALYZE ledger_credit")
    from refunds_admin.ledger.summary import record_posted_total

    for p, inc in zip(proposals, incident_rows):
        record_posted_total(p, posted_at=inc.failed_at + timedelta(minutes=40 + p.pk % 300))
    PostedTotal.objects.count()
