"""python manage.py reconcile: approved totals against the ledger; non-zero exit on a mismatch."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from refunds_admin.ledger import posting, selectors
from refunds_admin.proposals.models import PayoutProposal
from tests.posting_support import make_approved_proposal

pytestmark = pytest.mark.django_db


def test_it_reconciles_posted_proposals(capsys):
    posted = make_approved_proposal(amounts=[(1000, 0, 33, 100)] * 3)
    posting.post_proposal(posted.pk)
    waiting = make_approved_proposal(lines=2)  # approved, not posted yet: not a mismatch

    call_command("reconcile")
    out = capsys.readouterr().out
    assert (
        f"ok  proposal {posted.pk} (posted): approved 33.99 USD, ledger 33.99 USD in 9 credits"
        in out
    )
    assert f"proposal {waiting.pk} (approved)" in out
    assert "2 proposals checked, 0 mismatched" in out


def test_it_fails_when_a_posted_proposal_is_not_in_the_ledger(capsys):
    proposal = make_approved_proposal(lines=2)
    PayoutProposal.objects.filter(pk=proposal.pk).update(status="posted")  # books nothing
    with pytest.raises(CommandError, match="1 proposal"):
        call_command("reconcile")
    out = capsys.readouterr().out
    assert f"MISMATCH proposal {proposal.pk} (posted)" in out
    assert "posted, but the ledger differs from the approved total" in out


def test_it_reconciles_only_the_proposals_asked_about():
    first = make_approved_proposal(lines=2)
    second = make_approved_proposal(lines=2)
    rows = selectors.reconcile([second.pk])
    assert [row["proposal"] for row in rows] == [second.pk]
    assert first.pk in [row["proposal"] for row in selectors.reconcile()]
