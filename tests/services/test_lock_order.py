"""One lock order everywhere (tournament -> incident -> proposal -> job): preparing again and
approving at the same moment, on real PostgreSQL connections in two threads, never deadlocks;
one of them wins and the other is refused with a reason."""

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied

from refunds_admin.errors import Refused
from refunds_admin.proposals import services
from refunds_admin.proposals.models import PayoutProposal
from tests.support.concurrency import at_once
from tests.support.factories import submitted_proposal

pytestmark = pytest.mark.postgres

ROUNDS = 12


def _user(django_user_model, name, role):
    user = django_user_model.objects.create(username=name)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def test_it_never_deadlocks_when_prepare_and_approve_race(transactional_db, django_user_model):
    preparer = _user(django_user_model, "sue_support", "support")
    approver = _user(django_user_model, "mia_manager", "manager")
    for n in range(ROUNDS):
        proposal = submitted_proposal(preparer, external_id=f"T-RACE-{n}")
        incident = proposal.incident
        actions = [
            lambda p=proposal: services.approve_proposal(
                p, acting_user=approver, fingerprint=p.fingerprint
            ),
            lambda i=incident: services.prepare_proposal(i, acting_user=preparer),
        ]
        if n % 2:
            actions.reverse()
        outcomes = at_once(*actions, catch=Exception)
        unexpected = [o for o in outcomes if not isinstance(o, (PayoutProposal, Refused))]
        assert not unexpected, f"round {n}: {unexpected!r}"  # a deadlock lands here
        assert not any(isinstance(o, PermissionDenied) for o in outcomes)
        final = PayoutProposal.objects.get(pk=proposal.pk)
        # Prepared again first, the submitted version is kept, superseded by a new draft.
        assert final.status in ("approved", "superseded"), final.status
        # The winner decided it: approved means prepare was refused, and vice versa.
        refused = [o for o in outcomes if isinstance(o, Refused)]
        assert len(refused) <= 1, outcomes
        if final.status == "approved":
            assert len(refused) == 1 and final.wallet
