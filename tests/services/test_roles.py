"""Roles x actions: every workflow service checks the role itself, so a view, a command and the
API cannot disagree (design.md, "Who uses it")."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.incidents import services as incidents
from refunds_admin.incidents.services import import_csv
from refunds_admin.proposals import services as proposals
from tests.support.csv_data import ENTRIES_CSV, PRIZES_CSV, csv_fields
from tests.support.factories import cancelled_incident, import_doc, open_incident

pytestmark = pytest.mark.django_db

PREPARE = {"support", "manager"}
DECIDE = {"manager"}


def _submitted(helper):
    proposal = proposals.prepare_proposal(cancelled_incident(helper), acting_user=helper)
    return proposals.submit_proposal(proposal, acting_user=helper)


# action: (roles allowed, setup(helper) -> perform(user)); `helper` is a support user who
# prepares whatever state the action needs, so that four eyes never interferes.
ACTIONS = {
    "import a snapshot": (PREPARE, lambda h: lambda u: import_doc(u)),
    "import CSV": (
        PREPARE,
        lambda h: lambda u: import_csv(ENTRIES_CSV, PRIZES_CSV, csv_fields(), acting_user=u),
    ),
    "record an incident": (
        PREPARE,
        lambda h: (
            lambda t: (
                lambda u: incidents.record_incident(
                    t, failed_at=timezone.now(), cause="network", description="", acting_user=u
                )
            )
        )(import_doc(h).tournament),
    ),
    "log a restart attempt": (
        PREPARE,
        lambda h: (
            lambda i: (
                lambda u: incidents.log_restart_attempt(
                    i, attempted_at=timezone.now(), succeeded=False, note="", acting_user=u
                )
            )
        )(open_incident(h)),
    ),
    "mark play resumed": (
        PREPARE,
        lambda h: (
            lambda i: lambda u: incidents.mark_resumed(i, resumed_at=timezone.now(), acting_user=u)
        )(open_incident(h)),
    ),
    "cancel after the window": (
        PREPARE,
        lambda h: (lambda i: lambda u: incidents.cancel_after_window(i, acting_user=u))(
            open_incident(h, failed_ago=timedelta(minutes=31))
        ),
    ),
    "declare not resumable": (
        DECIDE,
        lambda h: (
            lambda i: lambda u: incidents.declare_not_resumable(i, reason="dead", acting_user=u)
        )(open_incident(h)),
    ),
    "confirm a site-wide issue": (
        DECIDE,
        lambda h: (
            lambda i: (
                lambda u: incidents.confirm_site_wide_issue(i, justification="lag", acting_user=u)
            )
        )(open_incident(h)),
    ),
    "prepare a proposal": (
        PREPARE,
        lambda h: (lambda i: lambda u: proposals.prepare_proposal(i, acting_user=u))(
            cancelled_incident(h)
        ),
    ),
    "submit a proposal": (
        PREPARE,
        lambda h: (lambda p: lambda u: proposals.submit_proposal(p, acting_user=u))(
            proposals.prepare_proposal(cancelled_incident(h), acting_user=h)
        ),
    ),
    "approve a proposal": (
        DECIDE,
        lambda h: (
            lambda p: (
                lambda u: proposals.approve_proposal(p, acting_user=u, fingerprint=p.fingerprint)
            )
        )(_submitted(h)),
    ),
    "reject a proposal": (
        DECIDE,
        lambda h: (lambda p: lambda u: proposals.reject_proposal(p, acting_user=u, reason="no"))(
            _submitted(h)
        ),
    ),
}
PERSONAS = ["support", "manager", "auditor", "outsider"]


@pytest.fixture
def helper(django_user_model):
    user = django_user_model.objects.create(username="hal_helper")
    user.groups.add(Group.objects.get_or_create(name="support")[0])
    return user


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("action", ACTIONS)
def test_it_lets_only_the_designed_roles_act(action, persona, helper, request):
    allowed, setup = ACTIONS[action]
    perform = setup(helper)
    user = request.getfixturevalue(persona)
    events = AuditEvent.objects.count()
    if persona in allowed:
        perform(user)
        assert AuditEvent.objects.count() > events
    else:
        with pytest.raises(PermissionDenied):
            perform(user)
        assert AuditEvent.objects.count() == events  # nothing changed
