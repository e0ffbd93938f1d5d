"""Two managers at once on policies: one outcome each time (real PostgreSQL connections in two
threads). The test database is transactional: after a flush the presets are put back
(policies/apps.py)."""

import pytest
from django.contrib.auth.models import Group

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.policies import services as policies
from refunds_admin.policies.models import PolicyVersion
from tests.support.concurrency import at_once
from tests.support.factories import enrol_device, policy_doc, totp_code

pytestmark = pytest.mark.postgres


@pytest.fixture
def managers(transactional_db, django_user_model):
    group = Group.objects.get_or_create(name="manager")[0]
    users = []
    for name in ("mia", "max", "moe"):
        user = django_user_model.objects.create_user(username=name, password="pw-" + name)
        user.groups.add(group)
        enrol_device(user)
        users.append(user)
    return users


def test_two_proposals_of_one_policy_at_once_leave_one_waiting(managers):
    mia, max_, _ = managers
    outcomes = at_once(
        lambda: policies.propose_policy_version(policy_doc(first_place_cap=True), acting_user=mia),
        lambda: policies.propose_policy_version(
            policy_doc(overlay="returned_to_house"), acting_user=max_
        ),
    )
    proposed = [o for o in outcomes if isinstance(o, PolicyVersion)]
    assert len(proposed) == 1 and isinstance(
        next(o for o in outcomes if o not in proposed), Refused
    )
    assert list(
        PolicyVersion.objects.filter(policy_id="roll-forward-50-50").values_list(
            "version", "status"
        )
    ) == [(2, "proposed"), (1, "approved")]


def test_two_approvals_at_once_approve_once(managers):
    mia, max_, moe = managers
    version = policies.propose_policy_version(policy_doc(first_place_cap=True), acting_user=mia)
    codes = {max_.pk: totp_code(max_), moe.pk: totp_code(moe)}
    outcomes = at_once(
        *(
            lambda user=user: policies.approve_policy_version(
                version, acting_user=user, sha256=version.sha256, code=codes[user.pk]
            )
            for user in (max_, moe)
        )
    )
    approved = [o for o in outcomes if isinstance(o, PolicyVersion)]
    assert len(approved) == 1 and any(isinstance(o, Refused) for o in outcomes), outcomes
    assert AuditEvent.objects.filter(action="policy.version_approved").count() == 1
