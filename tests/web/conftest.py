"""Test data for the browser app, written straight through the models.

The pages only read these rows; the services that write them for real are tested in their own
apps. Amounts are integer cents.
"""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache

from refunds_admin.audit.models import AuditEvent
from refunds_admin.incidents.models import Incident
from refunds_admin.proposals.models import PayoutLine, PayoutProposal
from refunds_admin.tournaments.models import Entry, PrizePlace, Snapshot, Tournament

STARTS = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
FAILED = STARTS + timedelta(hours=3, minutes=14)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache (failed sign-ins are counted by django-axes in the
    database, which each test rolls back)."""
    cache.clear()
    yield
    cache.clear()


def snapshot_document(external_id, entries, active):
    """A real tournament-snapshot/1 document with the same entries the fixtures store, so that
    statements and replays (which recompute from the document) work on them."""
    prizes = [120000, 40000, 20000, 10000, 5000]
    return {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": external_id,
            "name": "$30 + $3 Sunday Special",
            "currency": "USD",
            "buy_in": "30.00",
            "fee": "3.00",
            "starts_at": STARTS.isoformat().replace("+00:00", "Z"),
            "prizes": [
                {"place": place, "amount": f"{amount // 100}.00"}
                for place, amount in enumerate(prizes, start=1)
            ],
        },
        "entries": [
            {
                "entry_id": f"e{i:03d}",
                "player_id": f"p{i:03d}",
                "screen_name": f"player{i:03d}",
                "status": "active" if i < active else "eliminated",
                **({"chips": (i + 1) * 1000} if i < active else {}),
            }
            for i in range(entries)
        ],
    }


def make_tournament(user, *, external_id="UP-TEST-1", entries=30, active=10):
    tournament = Tournament.objects.create(
        external_id=external_id,
        name="$30 + $3 Sunday Special",
        currency="USD",
        buy_in_cents=3000,
        fee_cents=300,
        starts_at=STARTS,
    )
    snapshot = Snapshot.objects.create(
        tournament=tournament,
        version=1,
        document=json.dumps(snapshot_document(external_id, entries, active)),
        sha256="0" * 64,
        source=Snapshot.Source.UPLOAD,
        entries_count=entries,
        active_count=active,
        imported_by=user,
    )
    tournament.current_snapshot = snapshot
    tournament.save()
    for place, amount in enumerate([120000, 40000, 20000, 10000, 5000], start=1):
        PrizePlace.objects.create(snapshot=snapshot, place=place, amount_cents=amount)
    Entry.objects.bulk_create(
        Entry(
            snapshot=snapshot,
            position=i,
            entry_id=f"e{i:03d}",
            player_id=f"p{i:03d}",
            screen_name=f"player{i:03d}",
            status="active" if i < active else "eliminated",
            chips=(i + 1) * 1000 if i < active else 0,
            buy_in_paid_cents=3000,
            fee_paid_cents=300,
        )
        for i in range(entries)
    )
    return tournament


def make_incident(tournament, user, *, status=Incident.Status.CANCELLED):
    return Incident.objects.create(
        tournament=tournament,
        status=status,
        failed_at=FAILED,
        cause=Incident.Cause.SERVER_CRASH,
        description="Game server 3 crashed",
        recorded_by=user,
        rule="not_in_the_money",
        cancelled_at=FAILED + timedelta(minutes=31) if status == "cancelled" else None,
        cancelled_because="window_passed" if status == "cancelled" else "",
    )


def make_proposal(incident, preparer, *, status=PayoutProposal.Status.SUBMITTED, submitter=None):
    snapshot = incident.tournament.current_snapshot
    entries = list(snapshot.entries.order_by("position"))
    lines = []
    for e in entries:
        active = e.status == "active"
        equity = e.chips * 3 if active else 0
        lines.append(
            PayoutLine(
                position=e.position,
                entry_id=e.entry_id,
                player_id=e.player_id,
                screen_name=e.screen_name,
                status=e.status,
                chips=e.chips,
                buy_in_refund_cents=3000 if active else 0,
                next_prize_cents=0,
                chip_equity_cents=equity,
                fee_refund_cents=300 if active else 0,
                total_cents=(3300 + equity) if active else 0,
                capped=e.position == 9,
            )
        )
    total = sum(line.total_cents for line in lines)
    proposal = PayoutProposal.objects.create(
        incident=incident,
        snapshot=snapshot,
        version=1,
        status=status,
        rule="not_in_the_money",
        currency="USD",
        failed_at=incident.failed_at,
        site_wide_issue=False,
        summary={
            "entries": len(lines),
            "active": sum(1 for line in lines if line.status == "active"),
            "remaining_pool": "1950.00",
            "fee_refunds": "30.00",
            "capped_entries": 1,
            "total": f"{total // 100}.{total % 100:02d}",
        },
        warnings=["prize_awarded totals differ from the prize table for places 11..5"],
        fingerprint="f" * 64,
        total_cents=total,
        lines_count=len(lines),
        prepared_by=preparer,
        prepared_at=FAILED + timedelta(minutes=40),
        submitted_by=submitter or (preparer if status != PayoutProposal.Status.DRAFT else None),
        submitted_at=FAILED + timedelta(minutes=45)
        if status != PayoutProposal.Status.DRAFT
        else None,
    )
    for line in lines:
        line.proposal = proposal
    PayoutLine.objects.bulk_create(lines)
    return proposal


@pytest.fixture
def world(support, manager, other_manager, auditor, outsider):
    """A cancelled tournament with a submitted proposal prepared by support, and history."""
    tournament = make_tournament(support)
    incident = make_incident(tournament, support)
    proposal = make_proposal(incident, support)
    AuditEvent.objects.create(
        actor=support,
        actor_name=support.username,
        action="proposal.submitted",
        object_type="payoutproposal",
        object_id=str(proposal.pk),
        tournament_external_id=tournament.external_id,
        player_ids=["p001", "p002"],
        before={"status": "draft"},
        after={"status": "submitted"},
    )
    AuditEvent.objects.create(
        actor=support,
        actor_name=support.username,
        action="incident.recorded",
        object_type="incident",
        object_id=str(incident.pk),
        tournament_external_id=tournament.external_id,
        after={
            "status": "open",
            "failed_at": FAILED.isoformat(),
            "cause": "server_crash",
            "rule": "not_in_the_money",
        },
    )
    return {"tournament": tournament, "incident": incident, "proposal": proposal}


def login(client, user):
    client.force_login(user)
    return client
