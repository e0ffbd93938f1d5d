"""Helpers for posting tests (and the UI's browser journey): approved proposals built through
the services, and real Celery worker processes on Redis against the test database.

    from tests.support.posting_support import celery_worker_process, make_approved_proposal  # noqa: F401

`celery_worker_process` is a fixture (it needs `transactional_db`, so the worker sees committed
rows); import it into a test module or a conftest to use it.
"""

import os
import signal
import subprocess
import sys
import time
from itertools import count
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from refunds_admin.payouts.money import format_cents, parse_amount
from tests.support.factories import approved_proposal, lines_doc, submitted_proposal

ROOT = Path(__file__).resolve().parents[2]
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


def make_submitted_proposal(lines=10, *, amounts=None, currency="USD"):
    """As make_approved_proposal, but left submitted: the manager `posting_approver` (who did
    not prepare it) may approve it."""
    if amounts is None:
        amounts = [(1000, 0, 0, 100)] * lines
    doc = lines_doc(amounts, external_id=f"PT-{os.getpid()}-{next(_serial)}", currency=currency)
    _user("posting_approver", "manager")
    return submitted_proposal(_user("posting_preparer", "support"), doc=doc)


def third_non_cash(index, entry, tournament=""):
    """`paid_with` for a proposal where a third of the refunds are not cash: entry 1,
    4, 7, ... bought in with a ticket TKT-<entry id> worth its whole buy-in and fee, entry 2,
    5, 8, ... with tournament money for the buy-in and cash for the fee; the others in cash."""
    paid = parse_amount(entry["buy_in_paid"]) + parse_amount(entry["fee_paid"])
    if index % 3 == 1:
        return [
            {
                "method": "ticket",
                "amount": format_cents(paid),
                "ticket_id": f"TKT-{tournament}-{entry['entry_id']}",
            }
        ]
    if index % 3 == 2:
        return [
            {"method": "tournament_money", "amount": entry["buy_in_paid"]},
            {"method": "cash", "amount": entry["fee_paid"]},
        ]
    return None


def make_approved_proposal(
    lines=10, *, amounts=None, currency="USD", schedule=True, paid_with=None
):
    """An approved proposal with `lines` lines, built through the services: a snapshot imported
    with import_snapshot, an incident recorded and cancelled after its window, the proposal
    prepared and submitted by support and approved by a manager (tests.factories).

    `amounts` is a list of (buy_in_refund, next_prize, chip_equity, fee_refund) cents per line,
    as the engine computes them from the snapshot `tests.factories.lines_doc` builds (see there
    which lines the rules can produce); by default every line refunds a 10.00 buy-in and a 1.00
    fee (the full refund: two credits per line). Entries are e000001, e000002, ... of players
    p000001, p000002, ...

    The approval records the posting order (the wallet this process is configured for). With
    `schedule` it queues the ledger's task when it commits, as in production (the first run
    creates the posting job). Without it nothing is queued, as if the broker had been down at
    approval (the sweeper's case), so that a test decides when and how the posting starts.
    """
    from refunds_admin.proposals import services as proposals

    if amounts is None:
        amounts = [(1000, 0, 0, 100)] * lines
    n = next(_serial)
    doc = lines_doc(amounts, external_id=f"PT-{os.getpid()}-{n}", currency=currency)
    if paid_with is not None:
        # `paid_with(index, entry, tournament id)`: how entry `index` (1, 2, ...) paid, or None for all in
        # cash (a full refund returns each part in the form paid, e.g. third_non_cash).
        for index, entry in enumerate(doc["entries"], start=1):
            payments = paid_with(index, entry, doc["tournament"]["external_id"])
            if payments is not None:
                entry["paid_with"] = payments
    preparer = _user("posting_preparer", "support")
    approver = _user("posting_approver", "manager")
    if schedule:
        proposal = approved_proposal(preparer, approver, doc=doc)
    else:
        with mock.patch.object(proposals, "queue_posting"):
            proposal = approved_proposal(preparer, approver, doc=doc)
    _check_lines(proposal, amounts)
    return proposal


def _check_lines(proposal, amounts):
    """The engine computed exactly the lines the test asked for (lines_doc's promise)."""
    stored = list(
        proposal.lines.order_by("position").values_list(
            "buy_in_refund_cents", "next_prize_cents", "chip_equity_cents", "fee_refund_cents"
        )
    )
    assert stored == [tuple(a) for a in amounts], "lines_doc: the engine computed other lines"


def expected_keys(proposal):
    """Every credit key the proposal must end up with, exactly once."""
    return set(expected_credits(proposal))


def expected_credits(proposal):
    """{key: (method, ticket_id, cents)} of every credit the proposal must end up with, from
    its stored lines as the writer books them (writers.line_credits)."""
    from refunds_admin.ledger.models import COMPONENT_FIELDS
    from refunds_admin.ledger.writers import line_credits

    fields = [f for _, f in COMPONENT_FIELDS]
    out = {}
    for line in proposal.lines.values_list("entry_id", "player_id", *fields, "refunds"):
        for c in line_credits(proposal.pk, *line):
            out[c["key"]] = (c["method"], c["ticket_id"], c["amount"])
    return out


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
    """Start and kill `celery -A refunds_admin worker` processes for one test.

    As deployed (README, "Deploying"), the long jobs' workers serve the "celery" queue and one
    worker of its own serves the "periodic" queue (sweepers, staff e-mails, heartbeats): the
    first `start()` starts that one too, with the same environment, unless `start_periodic()`
    started it already. Killing a posting worker leaves it running, as in production."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.procs = []
        self.periodic = None
        self.beat = None

    def env(self, **extra):
        env = dict(os.environ)
        env["DATABASE_URL"] = worker_database_url()
        env["REDIS_URL"] = os.environ["REDIS_URL"]
        env.setdefault("POSTING_STALE_AFTER", "120")
        env["PYTHONUNBUFFERED"] = "1"
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def start(self, name=None, *, concurrency=1, wait=True, queues="celery", **env):
        """Start a worker (its own process group); waits until it is ready for tasks."""
        if self.periodic is None and queues != "periodic":
            self.start_periodic(**env)
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
                f"--queues={queues}",
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

    def start_periodic(self, **env):
        """The worker of the periodic queue (one process: sweeps run one at a time anyway)."""
        self.periodic = self.start("periodic", queues="periodic", **env)
        return self.periodic

    def start_beat(self, **env):
        """`celery beat`, sending the periodic tasks every SWEEP_EVERY seconds (set it low)."""
        log = self.tmp_path / "beat.log"
        handle = open(log, "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "refunds_admin",
                "beat",
                "--loglevel=INFO",
                f"--schedule={self.tmp_path / 'beat-schedule'}",
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
        self.beat = proc
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
