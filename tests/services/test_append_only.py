"""Append-only everywhere money is recorded, refused by PostgreSQL itself: no TRUNCATE of
credits, cashier deliveries only move forward, proposal lines immutable once submitted."""

import pytest
from django.db import connection, transaction
from django.db.models import F

from refunds_admin.errors import Refused
from refunds_admin.ledger import posting
from refunds_admin.ledger.models import CashierDelivery, Credit
from refunds_admin.proposals import services as proposals
from refunds_admin.proposals.models import PayoutLine
from tests.support.factories import approved_proposal, draft_proposal, submitted_proposal
from tests.support.fake_cashier import FakeCashier

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _refused(sql, params=(), match="refused"):
    with connection.cursor() as cursor:
        # Deferred foreign-key checks of this test's own inserts would block a TRUNCATE.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    with pytest.raises(Exception, match=match), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


def test_it_refuses_to_truncate_credits(support, manager):
    proposal = approved_proposal(support, manager)
    posting.post_proposal(proposal.pk)
    _refused("TRUNCATE ledger_credit CASCADE", match="append-only: TRUNCATE refused")
    assert Credit.objects.filter(proposal=proposal).exists()


@pytest.fixture
def posted_to_a_cashier(settings, support, manager):
    with FakeCashier() as cashier:
        settings.CASHIER_URL = cashier.url
        settings.CASHIER_TOKEN = cashier.token
        settings.CASHIER_BACKOFF = 0.01
        proposal = approved_proposal(support, manager)
        posting.schedule_posting(proposal)
        key = f"proposal-{proposal.pk}/e1/chip_equity"
        cashier.script = {key: ["422"]}
        with pytest.raises(posting.PostingStopped):
            posting.post_proposal(proposal.pk)
        yield proposal, key


def test_it_moves_cashier_deliveries_only_forward(posted_to_a_cashier):
    proposal, refused_key = posted_to_a_cashier
    applied = CashierDelivery.objects.filter(state="applied").values_list("credit_id", flat=True)
    applied_key = applied.first()
    assert applied_key and CashierDelivery.objects.get(credit_id=refused_key).state == "failed"

    table = "ledger_cashierdelivery"
    for sql in (
        f"UPDATE {table} SET cashier_credit_id = 'other' WHERE credit_id = %s",
        f"UPDATE {table} SET state = 'failed' WHERE credit_id = %s",
    ):
        _refused(sql, [applied_key], match="was applied by the cashier and never changes")
    _refused(f"DELETE FROM {table} WHERE credit_id = %s", [refused_key], match="DELETE")
    _refused(f"DELETE FROM {table} WHERE credit_id = %s", [applied_key], match="DELETE")
    _refused(f"TRUNCATE {table}", match="TRUNCATE refused")
    # A refused delivery may move forward to applied (after a manager's resume).
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET state = 'applied' WHERE credit_id = %s", [refused_key])
    assert CashierDelivery.objects.get(credit_id=refused_key).state == "applied"


def test_it_keeps_the_lines_of_a_submitted_proposal_immutable(support, manager):
    proposal = submitted_proposal(support)
    line = PayoutLine.objects.filter(proposal=proposal).first()
    _refused(
        "UPDATE proposals_payoutline SET chip_equity_cents = chip_equity_cents + 1, "
        "total_cents = total_cents + 1 WHERE id = %s",
        [line.pk],
        match=f"proposal {proposal.pk} is submitted: its lines are immutable",
    )
    _refused("DELETE FROM proposals_payoutline WHERE id = %s", [line.pk], match="immutable")
    _refused(
        "INSERT INTO proposals_payoutline (proposal_id, position, entry_id, player_id, "
        "status, chips, buy_in_refund_cents, next_prize_cents, chip_equity_cents,"
        " fee_refund_cents, total_cents, capped) VALUES (%s, 999, 'x', 'x', 'active', 1, "
        "0, 0, 0, 0, 0, false)",
        [proposal.pk],
        match="immutable",
    )
    _refused("TRUNCATE proposals_payoutline CASCADE", match="TRUNCATE refused")
    assert PayoutLine.objects.get(pk=line.pk).total_cents == line.total_cents

    # Preparing again is allowed: a new version is prepared as a draft, and the submitted one is
    # kept, superseded, with its lines as they were.
    incident = proposal.incident
    again = proposals.prepare_proposal(incident, acting_user=support)
    assert again.status == "draft" and again.version == proposal.version + 1
    proposal.refresh_from_db()
    assert proposal.status == "superseded"
    assert PayoutLine.objects.get(pk=line.pk).total_cents == line.total_cents


def test_it_lets_a_draft_change_its_lines(support):
    proposal = draft_proposal(support)
    line = PayoutLine.objects.filter(proposal=proposal).first()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM proposals_payoutline WHERE id = %s", [line.pk])
    assert not PayoutLine.objects.filter(pk=line.pk).exists()


def test_approval_refuses_lines_changed_behind_the_apps_back(support, manager):
    """Lines rewritten with the triggers off (what the tables' owner can do): the approval checks
    them against the proposal's fingerprint and approves nothing."""
    from refunds_admin.proposals.models import PayoutLine, PayoutProposal
    from tests.support.tampering import triggers_off

    proposal = submitted_proposal(support)
    line = PayoutLine.objects.filter(proposal=proposal, total_cents__gt=0).first()
    with triggers_off():
        PayoutLine.objects.filter(pk=line.pk).update(
            fee_refund_cents=F("fee_refund_cents") + 100_00, total_cents=F("total_cents") + 100_00
        )
    with pytest.raises(Refused, match="no longer match its fingerprint"):
        proposals.approve_proposal(proposal, acting_user=manager, fingerprint=proposal.fingerprint)
    assert PayoutProposal.objects.get(pk=proposal.pk).status == "submitted"
