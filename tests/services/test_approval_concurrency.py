"""Two managers at once: compare-and-set leaves exactly one outcome (real PostgreSQL
connections in two threads; each thread has its own Django connection)."""

import pytest
from django.contrib.auth.models import Group

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.proposals import services
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.tournaments.models import Tournament
from tests.support.concurrency import at_once
from tests.support.factories import cancelled_incident

pytestmark = pytest.mark.postgres


@pytest.fixture
def submitted(transactional_db, django_user_model):
    """Each thread commits on its own connection, so the test database is transactional (emptied
    after the test; tests/conftest.py lets that flush past the append-only triggers)."""
    preparer = django_user_model.objects.create(username="sue_support")
    preparer.groups.add(Group.objects.get_or_create(name="support")[0])
    proposal = services.prepare_proposal(cancelled_incident(preparer), acting_user=preparer)
    return services.submit_proposal(proposal, acting_user=preparer)


def _managers(django_user_model, *names):
    group = Group.objects.get_or_create(name="manager")[0]
    users = []
    for name in names:
        user = django_user_model.objects.create(username=name)
        user.groups.add(group)
        users.append(user)
    return users


def test_it_approves_once_when_two_managers_approve_at_once(submitted, django_user_model):
    m1, m2 = _managers(django_user_model, "mia", "max")
    outcomes = at_once(
        lambda: services.approve_proposal(
            submitted, acting_user=m1, fingerprint=submitted.fingerprint
        ),
        lambda: services.approve_proposal(
            submitted, acting_user=m2, fingerprint=submitted.fingerprint
        ),
        timeout=30,
    )
    refused = [o for o in outcomes if isinstance(o, Refused)]
    approved = [o for o in outcomes if isinstance(o, PayoutProposal)]
    assert len(approved) == 1 and len(refused) == 1, outcomes
    proposal = PayoutProposal.objects.get(pk=submitted.pk)
    # Approved once; where tasks run in-process (no REDIS_URL) the posting already ran.
    assert proposal.status in ("approved", "posted")
    assert proposal.approved_by == approved[0].approved_by
    assert AuditEvent.objects.filter(action="proposal.approved").count() == 1
    assert Tournament.objects.get().frozen_at is not None


def test_it_has_one_outcome_when_approve_and_reject_race(submitted, django_user_model):
    m1, m2 = _managers(django_user_model, "mia", "max")
    outcomes = at_once(
        lambda: services.approve_proposal(
            submitted, acting_user=m1, fingerprint=submitted.fingerprint
        ),
        lambda: services.reject_proposal(submitted, acting_user=m2, reason="numbers look off"),
        timeout=30,
    )
    assert sum(isinstance(o, PayoutProposal) for o in outcomes) == 1, outcomes
    assert sum(isinstance(o, Refused) for o in outcomes) == 1, outcomes
    proposal = PayoutProposal.objects.get(pk=submitted.pk)
    decided = AuditEvent.objects.filter(action__in=["proposal.approved", "proposal.rejected"])
    assert decided.count() == 1 and decided.get().action == f"proposal.{proposal.status}"
    assert (Tournament.objects.get().frozen_at is not None) == (proposal.status == "approved")
