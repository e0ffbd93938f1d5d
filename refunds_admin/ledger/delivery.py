"""Delivering a posting job's booked credits to the cashier: batches of credits, many requests
in flight, one commit per batch of answers (docs/posting.md). The job itself (claim, chunks,
wallet unavailable, fail) is in posting.py, which calls `deliver_all` once the chunks are booked."""

from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Sum
from django.utils import timezone

from refunds_admin.jobs.clock import now_expr

from .models import POSTING_JOBS, CashierDelivery, Component, Credit, PostingJob
from .recovery import note_progress
from .wallets import credit_body

_COMPONENT_LABELS = dict(Component.choices)


def deliver_all(job, wallet):
    """Send every booked credit of the proposal that the cashier has not confirmed yet, read
    CASHIER_BATCH at a time as the requests go out (one stream, no pause between pages)."""
    proposal = job.proposal
    tournament = proposal.incident.tournament.external_id
    page = max(1, getattr(settings, "CASHIER_BATCH", 2000))
    cents_by_key: dict[str, int] = {}

    def unconfirmed():
        last_key = ""
        while True:
            credits = list(
                Credit.objects.filter(proposal_id=proposal.pk, key__gt=last_key)
                .exclude(delivery__state=CashierDelivery.State.APPLIED)
                .order_by("key")
                .values(
                    "key",
                    "entry_id",
                    "component",
                    "player_id",
                    "currency",
                    "amount_cents",
                    "method",
                    "ticket_id",
                )[:page]
            )
            if not credits:
                return
            last_key = credits[-1]["key"]
            for c in credits:
                cents_by_key[c["key"]] = c["amount_cents"]
                label = _COMPONENT_LABELS[c["component"]]
                yield c["key"], credit_body(c, proposal.pk, tournament, label)

    wallet.deliver(
        unconfirmed(),
        record=partial(_record_deliveries, job, cents_by_key),
        heartbeat=partial(_beat, job),
        batch=max(50, min(500, page)),
    )


def _record_deliveries(job, cents_by_key, results):
    """One transaction per batch of answers: the deliveries (forward only: an applied one is
    never touched again) and the job's progress (what the cashier confirmed). Only credits
    without an applied delivery are ever sent, and one worker holds the job, so each applied
    answer adds one credit to the progress (the check constraint caps it at the total)."""
    table = connection.ops.quote_name(CashierDelivery._meta.db_table)
    now = timezone.now()
    rows = [
        (
            key,
            CashierDelivery.State.APPLIED if o.applied else CashierDelivery.State.FAILED,
            o.cashier_credit_id[:128],
            o.error,
            now,
        )
        for key, o in results
    ]
    with transaction.atomic():
        if rows:
            _write_deliveries(table, rows)
        confirmed = [key for key, o in results if o.applied]
        fields: dict[str, Any] = {"heartbeat_at": now_expr()}
        if confirmed:
            fields.update(
                posted=F("posted") + len(confirmed),
                posted_cents=F("posted_cents") + sum(cents_by_key.pop(k) for k in confirmed),
                wallet_unavailable_since=None,
                wallet_unavailable_retries=0,
                retry_at=None,
            )
        PostingJob.objects.filter(pk=job.pk).update(**fields)
        if confirmed:
            # The cashier answers again: the page stops saying "waiting"; the history keeps it.
            note_progress(job)


def _write_deliveries(table, rows):
    """Insert or move forward the deliveries of a batch of answers (each credit answered once
    per batch); an applied one is never touched again."""
    columns = "(credit_id, state, cashier_credit_id, error, updated_at)"
    upsert = (
        "ON CONFLICT (credit_id) DO UPDATE SET state = excluded.state, "
        "cashier_credit_id = excluded.cashier_credit_id, error = excluded.error, "
        f"updated_at = excluded.updated_at WHERE {table}.state <> 'applied'"
    )
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.executemany(
                f"INSERT INTO {table} {columns} VALUES (%s, %s, %s, %s, %s) {upsert}", rows
            )
            return
        # One statement from five arrays, not one statement per answer: this thread also
        # hands the requests to the sending threads (docs/performance.md, "The answers'
        # headers").
        cursor.execute(
            f"INSERT INTO {table} {columns} SELECT * FROM unnest(%s::text[], %s::text[], "
            f"%s::text[], %s::text[], %s::timestamptz[]) {upsert}",
            [list(column) for column in zip(*rows, strict=True)],
        )


def cashier_applied(proposal_id):
    return CashierDelivery.objects.filter(
        credit__proposal_id=proposal_id, state=CashierDelivery.State.APPLIED
    ).aggregate(n=Count("pk"), cents=Sum("credit__amount_cents"))


def _beat(job):
    """The job is alive (for the sweeper), even while a slow cashier answers."""
    POSTING_JOBS.beat(pk=job.pk)
