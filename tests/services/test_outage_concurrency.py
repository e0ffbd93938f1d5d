"""Two managers approving overlapping batches of one outage at once (real PostgreSQL
connections, one per thread): each proposal ends approved exactly once, and each batch is
approved whole or not at all."""

import pytest
from django.contrib.auth.models import Group

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.proposals import batches
from refunds_admin.proposals.models import PayoutProposal
from tests.support.concurrency import at_once
from tests.support.factories import prepared_outage

pytestmark = pytest.mark.postgres


def _user(django_user_model, name, role):
    user = django_user_model.objects.create(username=name)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def outage(transactional_db, django_user_model, monkeypatch, settings):
    # No worker here: posting jobs stay queued in the outbox (the approval is what is tested).
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr("refunds_admin.ledger.posting.kick_posting", lambda proposal_id: True)
    # The batch prepare runs in this process below (prepared_outage), not queued.
    monkeypatch.setattr("refunds_admin.proposals.batches.kick_prepare", lambda run_id: None)
    preparer = _user(django_user_model, "sue_support", "support")
    return prepared_outage(preparer, external_ids=("C-1", "C-2", "C-3", "C-4", "C-5"))


def _batch(outage, ids):
    proposals = PayoutProposal.objects.filter(pk__in=ids)
    seen = {p.pk: p.fingerprint for p in proposals}
    return seen, batches.outage_fingerprint(seen.values())


@pytest.mark.parametrize("attempt", range(3))
def test_each_proposal_is_approved_exactly_once_when_two_batches_overlap(
    outage, django_user_model, attempt
):
    m1 = _user(django_user_model, "mia", "manager")
    m2 = _user(django_user_model, "max", "manager")
    ids = sorted(p.pk for p in batches.live_proposals(outage))
    first, second = ids[:3], ids[2:]  # they share the middle proposal
    seen1, fp1 = _batch(outage, first)
    seen2, fp2 = _batch(outage, second)
    outcomes = at_once(
        lambda: batches.approve_batch(outage, seen=seen1, fingerprint=fp1, acting_user=m1),
        lambda: batches.approve_batch(outage, seen=seen2, fingerprint=fp2, acting_user=m2),
    )
    approved = [o for o in outcomes if isinstance(o, list)]
    refused = [o for o in outcomes if isinstance(o, Refused)]
    assert len(approved) == 1 and len(refused) == 1, outcomes
    # The refusal names the shared proposal, already approved by the other manager.
    shared = PayoutProposal.objects.get(pk=ids[2])
    assert any(f"(proposal {shared.pk})" in where for where, _ in refused[0].problems)
    winner = approved[0]
    winner_ids = {p.pk for p in winner}
    assert winner_ids in (set(first), set(second))
    for pk in ids:
        proposal = PayoutProposal.objects.get(pk=pk)
        events = AuditEvent.objects.filter(action="proposal.approved", object_id=str(pk))
        if pk in winner_ids:
            assert proposal.status == "approved" and events.count() == 1
        else:  # the losing batch approved nothing, not even its proposals outside the overlap
            assert proposal.status == "submitted" and events.count() == 0
    assert AuditEvent.objects.filter(action="outage.batch_approved").count() == 1
