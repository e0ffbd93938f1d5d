"""Helpers for posting tests (and the UI's browser journey): approved proposals built directly
with the models, and real Celery worker processes on Redis against the test database.

    from tests.posting_support import celery_worker_process, make_approved_proposal  # noqa: F401

`celery_worker_process` is a fixture (it needs `transactional_db`, so the worker sees committed
rows); import it into a test module or a conftest to use it.
"""

import hashlib
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from itertools import count
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

ROOT = Path(__file__).resolve().parent.parent
_serial = count(1)


def _user(username, role):
    user, created = get_user_model().objects.get_or_create(
        username=username, defaults={"email": f"{username}@example.test"}
    )
    if created:
        user.set_password("pw-" + username)
        user.save()
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def make_approved_proposal(
    lines=10,
    *,
    amounts=None,
    currency="USD",
    schedule=True,
    chunked_lines_insert=5_000,
):
    """An approved proposal with `lines` lines, built directly with the models.

    `amounts` is a list of (buy_in_refund, next_prize, chip_equity, fee_refund) cents per line;
    by default every line refunds a 10.00 buy-in and a 1.00 fee (two credits per line).
    With `schedule`, the proposal is approved through proposals.services.approve_proposal when
    the workflow services exist (which calls schedule_posting in its transaction), otherwise as
    approve_proposal does it: schedule_posting in the approval's transaction. Either way the
    task is kicked when the approval commits. Without `schedule`: approved, no job yet.
    """
    from refunds_admin.incidents.models import Incident
    from refunds_admin.ledger.services import schedule_posting
    from refunds_admin.payouts.rules import fingerprint_lines
    from refunds_admin.proposals.models import PayoutLine, PayoutProposal
    from refunds_admin.proposals.posting import configured_wallet
    from refunds_admin.tournaments.models import Snapshot, Tournament

    if amounts is None:
        amounts = [(1000, 0, 0, 100)] * lines
    n = next(_serial)
    suffix = f"{os.getpid()}-{n}-{time.monotonic_ns()}"
    preparer = _user("posting_preparer", "support")
    approver = _user("posting_approver", "manager")
    now = timezone.now()
    with transaction.atomic():
        tournament = Tournament.objects.create(
            external_id=f"PT-{suffix}",
            name=f"Posting test {n}",
            currency=currency,
            buy_in_cents=1000,
            fee_cents=100,
            starts_at=now - timedelta(hours=2),
        )
        snapshot = Snapshot.objects.create(
            tournament=tournament,
            version=1,
            document="{}",
            sha256=hashlib.sha256(b"{}").hexdigest(),
            source=Snapshot.Source.DEMO,
            entries_count=len(amounts),
            active_count=len(amounts),
        )
        Tournament.objects.filter(pk=tournament.pk).update(current_snapshot=snapshot)
        incident = Incident.objects.create(
            tournament=tournament,
            status=Incident.Status.CANCELLED,
            failed_at=now - timedelta(hours=1),
            cause=Incident.Cause.SERVER_CRASH,
            recorded_by=preparer,
            rule="full_refund",
        )
        # The engine's fingerprint of exactly these lines, as prepare_proposal would store it.
        fingerprint = fingerprint_lines(
            tournament.external_id,
            currency,
            "full_refund",
            ((f"e{i:06d}", f"p{i:06d}", *a, sum(a)) for i, a in enumerate(amounts, start=1)),
        )
        approve = _approve_proposal() if schedule else None
        wallet, wallet_identity = configured_wallet()
        # Written as a draft (lines of a submitted proposal are immutable), then moved on.
        proposal = PayoutProposal.objects.create(
            incident=incident,
            snapshot=snapshot,
            version=1,
            status=PayoutProposal.Status.DRAFT,
            rule="full_refund",
            currency=currency,
            failed_at=incident.failed_at,
            site_wide_issue=False,
            summary={},
            fingerprint=fingerprint,
            approved_fingerprint="",
            total_cents=sum(sum(a) for a in amounts),
            lines_count=len(amounts),
            prepared_by=preparer,
            prepared_at=now,
            submitted_by=preparer,
            submitted_at=now,
            approved_by=None,
            approved_at=None,
        )
        PayoutLine.objects.bulk_create(
            (
                PayoutLine(
                    proposal=proposal,
                    position=i,
                    entry_id=f"e{i:06d}",
                    player_id=f"p{i:06d}",
                    screen_name=f"player{i}",
                    status="active" if sum(a) else "eliminated",
                    chips=1000 if sum(a) else 0,
                    buy_in_refund_cents=a[0],
                    next_prize_cents=a[1],
                    chip_equity_cents=a[2],
                    fee_refund_cents=a[3],
                    total_cents=sum(a),
                )
                for i, a in enumerate(amounts, start=1)
            ),
            batch_size=chunked_lines_insert,
        )
        if approve:
            PayoutProposal.objects.filter(pk=proposal.pk).update(status="submitted")
            proposal.refresh_from_db()
            proposal = approve(proposal, acting_user=approver, fingerprint=fingerprint)
        else:
            PayoutProposal.objects.filter(pk=proposal.pk).update(
                status=PayoutProposal.Status.APPROVED,
                approved_by=approver,
                approved_at=now,
                approved_fingerprint=fingerprint,
                wallet=wallet,
                wallet_identity=wallet_identity,
            )
            proposal.refresh_from_db()
            if schedule:
                schedule_posting(proposal, actor=approver)
    return proposal


def _approve_proposal():
    """The workflow's approve_proposal, once it exists in this checkout."""
    try:
        from refunds_admin.proposals.services import approve_proposal
    except ImportError:
        return None
    return approve_proposal


def expected_keys(proposal):
    """Every credit key the proposal must end up with, exactly once."""
    from refunds_admin.ledger.models import COMPONENT_FIELDS, credit_key

    keys = set()
    for line in proposal.lines.values("entry_id", *[f for _, f in COMPONENT_FIELDS]):
        for component, field in COMPONENT_FIELDS:
            if line[field] > 0:
                keys.add(credit_key(proposal.pk, line["entry_id"], component))
    return keys


def wait_for(predicate, timeout=30.0, interval=0.05, message="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


def wait_until_posted(proposal, timeout=60.0):
    from refunds_admin.ledger.models import PostingJob

    def done():
        job = PostingJob.objects.filter(proposal_id=proposal.pk).first()  # the first run makes it
        return (
            job if job and job.state in (PostingJob.State.POSTED, PostingJob.State.FAILED) else None
        )

    return wait_for(done, timeout, message=f"proposal {proposal.pk} to be posted")


def worker_database_url():
    """The URL of the database the test runs against (pytest-django's test database)."""
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        raise RuntimeError("a real worker needs PostgreSQL: set DATABASE_URL")
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


class WorkerProcesses:
    """Start and kill `celery -A refunds_admin worker` processes for one test."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.procs = []

    def env(self, **extra):
        env = dict(os.environ)
        env["DATABASE_URL"] = worker_database_url()
        env["REDIS_URL"] = os.environ["REDIS_URL"]
        env.setdefault("POSTING_STALE_AFTER", "120")
        env["PYTHONUNBUFFERED"] = "1"
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def start(self, name=None, *, concurrency=1, wait=True, **env):
        """Start a worker (its own process group); waits until it is ready for tasks."""
        name = name or f"w{len(self.procs) + 1}"
        log = self.tmp_path / f"worker-{name}.log"
        handle = open(log, "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "refunds_admin",
                "worker",
                "--loglevel=INFO",
                f"--concurrency={concurrency}",
                "--pool=prefork",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                f"--hostname={name}-{os.getpid()}@%h",
            ],
            cwd=ROOT,
            env=self.env(**env),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.log_path = log
        proc.log_handle = handle
        self.procs.append(proc)
        if wait:
            wait_for(
                lambda: proc.poll() is not None or " ready." in log.read_text(),
                timeout=60,
                message=f"worker {name} to be ready",
            )
            if proc.poll() is not None:
                raise AssertionError(f"worker {name} exited:\n{log.read_text()}")
        return proc

    def kill(self, proc, sig=signal.SIGKILL):
        """Kill the worker and its pool children at once (no warm shutdown, no acks)."""
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
        proc.log_handle.close()

    def stop_all(self):
        for proc in self.procs:
            if proc.poll() is None:
                self.kill(proc, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.kill(proc)
            if not proc.log_handle.closed:
                proc.log_handle.close()

    def logs(self):
        return "\n".join(p.log_path.read_text() for p in self.procs)


def purge_broker():
    """Empty our Redis database: messages of earlier runs name proposals that no longer exist."""
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    """Real Celery workers (subprocesses) on Redis and the test database.

    Returns a WorkerProcesses: `.start()` one (or more), `.kill(proc)` with SIGKILL. All are
    stopped at teardown. Rows must be committed for the worker to see them (transactional_db).
    """
    purge_broker()
    workers = WorkerProcesses(tmp_path)
    yield workers
    workers.stop_all()
    purge_broker()
