"""A kind of job: one table of job rows with a state, a queued stamp and a heartbeat.

The app's jobs (posting, player statements, an outage's batch prepare) each describe their table
with a JobKind beside their model; the toolkit then does, the same way for all of them:

- `claim()`: compare-and-set queued (or running but stalled: its worker died) -> running, with
  the heartbeat and the start stamped on the database's clock. A message delivered twice runs once.
- `beat()`: the job is alive (the database's time).
- `stale()`: what its sweeper queues again -- queued and not picked up for the stale period (once
  any backoff is over), or running without a heartbeat for that long.
- `status()`: the truthful state a page shows (see JobStatus).
- `stalled()`: running jobs without a heartbeat for the stale period, for /healthz.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.db.models.functions import Coalesce

from .clock import db_now, now_expr

KINDS: dict[str, "JobKind"] = {}


@dataclass(frozen=True)
class JobStatus:
    """What a page says about a job. `code` is one of queued, running, stalled (resuming),
    waiting (for `what` since `since`), failed (with `reason`), done."""

    code: str
    label: str
    since: datetime | None = None
    reason: str = ""
    what: str = ""

    @property
    def active(self) -> bool:
        """Still to change by itself: the page keeps polling."""
        return self.code in ("queued", "running", "stalled", "waiting")

    def __str__(self):
        return self.label


@dataclass(frozen=True)
class JobKind:
    name: str  # "posting", "prepare", "statements": the key /healthz reports it under
    model: Any
    stale_after: Callable[[], float]  # seconds without a heartbeat before a job is stalled
    queued_at: str = "queued_at"
    retry_at: str | None = None  # a backoff: not stale before it is over
    queued: str = "queued"
    running: str = "running"
    done: tuple[str, ...] = ("done",)
    failed: str = "failed"
    # (what, since) when a queued job waits for something (the wallet, the database), else None.
    waiting: Callable[[Any], tuple[str, datetime] | None] | None = field(default=None)

    def cutoff(self, now: datetime | None = None, stale_after: timedelta | None = None) -> datetime:
        period = timedelta(seconds=self.stale_after()) if stale_after is None else stale_after
        return (now or db_now()) - period

    def _stalled_q(self, cutoff):
        return Q(state=self.running, heartbeat_at__lte=cutoff) | Q(
            state=self.running, heartbeat_at__isnull=True, **{f"{self.queued_at}__lte": cutoff}
        )

    def stale(self, now: datetime | None = None, stale_after: timedelta | None = None):
        """Jobs to queue again: lost in the queue, or left running by a dead worker (no sign
        of life for `stale_after`, by default the kind's own period)."""
        now = now or db_now()
        cutoff = self.cutoff(now, stale_after)
        lost = Q(state=self.queued, **{f"{self.queued_at}__lte": cutoff})
        if self.retry_at:
            lost &= Q(**{f"{self.retry_at}__isnull": True}) | Q(**{f"{self.retry_at}__lte": now})
        return self.model.objects.filter(lost | self._stalled_q(cutoff))

    def stalled(self, now: datetime | None = None):
        return self.model.objects.filter(self._stalled_q(self.cutoff(now)))

    def claim(self, **where) -> bool:
        """Compare-and-set: the job matching `where`, queued or stalled, becomes running. True
        when this caller got it (then it alone runs it until its heartbeat stops)."""
        now = now_expr()
        changed = self.model.objects.filter(
            Q(state=self.queued) | self._stalled_q(self.cutoff()), **where
        ).update(state=self.running, started_at=Coalesce("started_at", now), heartbeat_at=now)
        return changed == 1

    def beat(self, **where) -> int:
        """The job is alive: heartbeat now (the database's time)."""
        return self.model.objects.filter(state=self.running, **where).update(
            heartbeat_at=now_expr()
        )

    def mark_queued(self, **where) -> int:
        """Stamp the moment it was (re)queued: the sweeper leaves it alone for a stale period."""
        return self.model.objects.filter(**where).update(**{self.queued_at: now_expr()})

    def status(self, job, now: datetime | None = None) -> JobStatus:
        """queued, running, stalled-resuming, waiting for X since T, failed with reason, done."""
        state = job.state
        label = job.get_state_display()  # the model's own word for its state
        if state in self.done:
            return JobStatus("done", label)
        if state == self.failed:
            return JobStatus("failed", label, reason=job.last_error)
        if state == self.running:
            beat = job.heartbeat_at or getattr(job, self.queued_at)
            if beat is not None and beat <= self.cutoff(now):
                return JobStatus(
                    "stalled",
                    "Stalled, resuming",
                    since=beat,
                    reason="its worker stopped sending heartbeats; the sweeper hands it to "
                    "another worker",
                )
            return JobStatus("running", label, since=job.heartbeat_at)
        waiting = self.waiting(job) if self.waiting else None
        if waiting:
            what, since = waiting
            return JobStatus(
                "waiting",
                f"Waiting for {what} since {since:%Y-%m-%d %H:%M:%S} UTC",
                since=since,
                what=what,
                reason=job.last_error,
            )
        return JobStatus("queued", label, since=getattr(job, self.queued_at))


def register(kind: JobKind) -> JobKind:
    KINDS[kind.name] = kind
    return kind


def stalled_jobs(now: datetime | None = None) -> dict[str, list[dict]]:
    """{kind: [{"id", "age_seconds"}]}: every running job without a heartbeat for its stale
    period, oldest first (for /healthz)."""
    now = now or db_now()
    report = {}
    for name, kind in sorted(KINDS.items()):
        rows = (
            kind.stalled(now)
            .order_by(Coalesce("heartbeat_at", kind.queued_at))
            .values_list("pk", Coalesce("heartbeat_at", kind.queued_at))[:50]
        )
        report[name] = [
            {"id": pk, "age_seconds": max(0, round((now - beat).total_seconds()))}
            for pk, beat in rows
        ]
    return report


__all__ = ["KINDS", "JobKind", "JobStatus", "register", "stalled_jobs"]
