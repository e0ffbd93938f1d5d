"""Cancellation policies in the app: versions proposed and approved with four eyes and a second
factor, frozen once approved, the default policy, and the version every tournament and proposal
runs under."""

import hashlib
import json
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.db.models import ProtectedError

from refunds_admin.audit.display import describe
from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incidents
from refunds_admin.policies import services as policies
from refunds_admin.policies.models import DefaultPolicy, Policy, PolicyVersion
from refunds_admin.proposals import services as proposals
from tests.support.factories import (
    approved_policy_version,
    cancelled_incident,
    draft_proposal,
    import_doc,
    policy_doc,
    proposed_policy_version,
    submitted_proposal,
    totp_code,
)
from tests.support.tampering import triggers_off

pytestmark = pytest.mark.django_db
PRESET_IDS = {
    "ultimatepoker-2026",
    "roll-forward-50-50",
    "rollback-before-first-bust",
    "buy-in-back-50-50",
}


def _sentence(action):
    return describe(AuditEvent.objects.filter(action=action).latest("id"))


# --------------------------------------------------------------------------------------------
# Presets and the default
# --------------------------------------------------------------------------------------------


def test_the_four_presets_are_approved_version_1_and_the_seed_is_the_default():
    versions = PolicyVersion.objects.filter(version=1, status="approved")
    assert set(versions.values_list("policy_id", flat=True)) == PRESET_IDS
    for v in versions:
        # The stored document is the canonical JSON its SHA-256 is taken over.
        assert hashlib.sha256(v.document.encode()).hexdigest() == v.sha256
        assert json.loads(v.document)["id"] == v.policy_id
        assert v.engine().sha256 == v.sha256
    assert policies.default_policy().id == "ultimatepoker-2026"


def test_an_import_without_a_policy_gets_the_default_policys_current_version(support):
    tournament = import_doc(support).tournament
    assert tournament.policy_version.label == "ultimatepoker-2026 v1"


def test_a_manager_sets_the_default_policy_and_it_is_audited(support, manager):
    policies.set_default_policy(Policy.objects.get(pk="roll-forward-50-50"), acting_user=manager)
    assert DefaultPolicy.objects.get().policy_id == "roll-forward-50-50"
    assert _sentence("policy.default_set") == (
        "maria_manager made roll-forward-50-50 the default policy (was ultimatepoker-2026)"
    )
    # Tournaments imported from now on without tournament.policy get it; earlier ones keep theirs.
    assert import_doc(support, external_id="T-2").tournament.policy_version.label == (
        "roll-forward-50-50 v1"
    )
    with pytest.raises(Refused, match="already the default"):
        policies.set_default_policy(
            Policy.objects.get(pk="roll-forward-50-50"), acting_user=manager
        )


def test_support_may_not_set_the_default_policy(support):
    with pytest.raises(PermissionDenied):
        policies.set_default_policy(Policy.objects.get(pk="buy-in-back-50-50"), acting_user=support)
    assert DefaultPolicy.objects.get().policy_id == "ultimatepoker-2026"


# --------------------------------------------------------------------------------------------
# Proposing
# --------------------------------------------------------------------------------------------


def test_a_proposed_version_gets_the_next_number_and_waits(manager):
    version = proposed_policy_version(manager, **{"full_refund.within_minutes": 10})
    assert (version.policy_id, version.version, version.status) == (
        "roll-forward-50-50",
        2,
        "proposed",
    )
    assert json.loads(version.document)["full_refund"]["within_minutes"] == 10
    assert hashlib.sha256(version.document.encode()).hexdigest() == version.sha256
    # Not yet what tournaments get.
    assert policies.current_version("roll-forward-50-50").version == 1
    assert "proposed policy version roll-forward-50-50 v2" in _sentence("policy.version_proposed")


def test_a_new_policy_id_starts_at_version_1(manager):
    version = proposed_policy_version(manager, id="house-rules", title="House rules")
    assert (version.policy_id, version.version) == ("house-rules", 1)
    assert Policy.objects.filter(pk="house-rules").exists()


def test_a_wrong_field_is_refused_naming_it_and_nothing_is_stored(manager):
    with pytest.raises(Refused) as refused:
        proposed_policy_version(manager, overlay="sometimes")
    assert "overlay" in [field for field, _ in refused.value.problems]
    with pytest.raises(Refused) as refused:
        proposed_policy_version(manager, **{"not_in_the_money.equal_share_percent": 120})
    assert "not_in_the_money.equal_share_percent" in [f for f, _ in refused.value.problems]
    with pytest.raises(Refused) as refused:
        policies.propose_policy_version(b"{not json", acting_user=manager)
    assert refused.value.problems[0][0] == "document"
    assert not PolicyVersion.objects.filter(status="proposed").exists()


def test_the_same_rules_again_are_refused(manager):
    with pytest.raises(Refused, match="exactly roll-forward-50-50 v1"):
        proposed_policy_version(manager)


def test_one_version_of_a_policy_waits_at_a_time(manager):
    proposed_policy_version(manager, first_place_cap=True)
    with pytest.raises(Refused, match="waiting for a decision"):
        proposed_policy_version(manager, overlay="returned_to_house")


def test_support_may_not_propose_a_policy(support):
    with pytest.raises(PermissionDenied):
        proposed_policy_version(support, first_place_cap=True)


# --------------------------------------------------------------------------------------------
# Approving and rejecting: four eyes, a second factor
# --------------------------------------------------------------------------------------------


def test_another_manager_approves_with_a_code_and_tournaments_get_it(
    support, manager, other_manager
):
    version = approved_policy_version(manager, other_manager, first_place_cap=True)
    assert version.status == "approved" and version.approved_by == other_manager
    assert policies.current_version("roll-forward-50-50") == version
    assert _sentence("policy.version_approved").startswith(
        "otto_manager approved policy version roll-forward-50-50 v2"
    )


def test_the_proposer_may_not_approve_or_reject_their_own_version(manager):
    version = proposed_policy_version(manager, first_place_cap=True)
    with pytest.raises(PermissionDenied, match="four eyes"):
        policies.approve_policy_version(
            version, acting_user=manager, sha256=version.sha256, code=totp_code(manager)
        )
    with pytest.raises(PermissionDenied, match="four eyes"):
        policies.reject_policy_version(version, acting_user=manager, reason="no")
    version.refresh_from_db()
    assert version.status == "proposed"


def test_a_manager_whose_sign_in_someone_else_set_decides_no_policy_version(
    manager, other_manager, superuser
):
    """As for proposals: whoever set a manager's password could sign in as them and be the
    second pair of eyes on a version, so that manager approves and rejects none until they set
    it again themselves."""
    from refunds_admin.accounts import credentials

    version = proposed_policy_version(manager, first_place_cap=True)
    credentials.set_for(other_manager, credentials.PASSWORD, by=superuser)
    with pytest.raises(PermissionDenied, match="set by root"):
        policies.approve_policy_version(
            version, acting_user=other_manager, sha256=version.sha256, code=totp_code(other_manager)
        )
    with pytest.raises(PermissionDenied, match="set by root"):
        policies.reject_policy_version(version, acting_user=other_manager, reason="no")
    version.refresh_from_db()
    assert version.status == "proposed"
    credentials.set_by_themselves(other_manager, credentials.PASSWORD)
    policies.approve_policy_version(
        version, acting_user=other_manager, sha256=version.sha256, code=totp_code(other_manager)
    )
    version.refresh_from_db()
    assert version.status == "approved"


def test_approval_needs_a_current_code_and_the_hash_read(manager, other_manager):
    version = proposed_policy_version(manager, first_place_cap=True)
    with pytest.raises(Refused, match="code does not match"):
        policies.approve_policy_version(
            version, acting_user=other_manager, sha256=version.sha256, code="000000"
        )
    with pytest.raises(Refused, match="not the one you read"):
        policies.approve_policy_version(
            version, acting_user=other_manager, sha256="ab" * 32, code=totp_code(other_manager)
        )
    code = totp_code(other_manager)
    policies.approve_policy_version(
        version, acting_user=other_manager, sha256=version.sha256, code=code
    )
    version.refresh_from_db()
    assert version.status == "approved"
    with pytest.raises(Refused, match="approved, not proposed"):
        policies.approve_policy_version(
            version, acting_user=other_manager, sha256=version.sha256, code=totp_code(other_manager)
        )


def test_a_rejected_version_needs_a_reason_and_never_applies(manager, other_manager):
    version = proposed_policy_version(manager, first_place_cap=True)
    with pytest.raises(Refused, match="reason"):
        policies.reject_policy_version(version, acting_user=other_manager, reason=" ")
    policies.reject_policy_version(version, acting_user=other_manager, reason="cap is wrong")
    version.refresh_from_db()
    assert version.status == "rejected" and version.rejection_reason == "cap is wrong"
    assert policies.current_version("roll-forward-50-50").version == 1
    assert _sentence("policy.version_rejected").endswith("— cap is wrong")
    # The next proposal takes the next number.
    assert proposed_policy_version(manager, first_place_cap=True).version == 3


# --------------------------------------------------------------------------------------------
# An approved version never changes
# --------------------------------------------------------------------------------------------


def test_an_approved_version_never_changes_and_is_never_deleted():
    version = policies.current_version("ultimatepoker-2026")
    version.document = version.document.replace("20", "30")
    with pytest.raises(Refused, match="never changes"):
        version.save()
    with pytest.raises(Refused, match="never deleted"):
        PolicyVersion.objects.get(pk=version.pk).delete()


@pytest.mark.postgres
def test_the_database_refuses_to_change_or_delete_an_approved_version(support):
    version = policies.current_version("ultimatepoker-2026")
    import_doc(support)  # a tournament now runs under it
    for sql in (
        "UPDATE policies_policyversion SET document = '{}' WHERE id = %s",
        "UPDATE policies_policyversion SET sha256 = 'x' WHERE id = %s",
        "UPDATE policies_policyversion SET status = 'rejected' WHERE id = %s",
        "DELETE FROM policies_policyversion WHERE id = %s",
    ):
        with pytest.raises(Exception, match="is approved: it never changes"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, [version.pk])
    assert PolicyVersion.objects.get(pk=version.pk).sha256 == version.sha256


def test_a_version_a_tournament_runs_under_is_protected(support, manager):
    version = import_doc(support).tournament.policy_version
    with pytest.raises(ProtectedError):
        PolicyVersion.objects.filter(pk=version.pk).delete()  # past the model's own guard


# --------------------------------------------------------------------------------------------
# Changing a tournament's policy
# --------------------------------------------------------------------------------------------


def _rollforward():
    return policies.current_version("roll-forward-50-50")


def test_changing_the_policy_makes_the_live_proposal_stale(support, manager, other_manager):
    proposal = submitted_proposal(support)
    tournament = proposal.incident.tournament
    assert proposal.policy_version.label == "ultimatepoker-2026 v1"
    assert proposal.policy_sha256 == proposal.policy_version.sha256
    # The seed's policy without its cap: the same components, another version.
    uncapped = approved_policy_version(
        other_manager, manager, doc=policy_doc("ultimatepoker-2026", first_place_cap=False)
    )
    incidents.change_tournament_policy(
        tournament, uncapped, acting_user=manager, reason="the operator dropped the cap"
    )
    tournament.refresh_from_db()
    assert tournament.policy_version == uncapped
    assert tournament.policy_changed_by == manager
    assert _sentence("tournament.policy_changed") == (
        "maria_manager put tournament T-1 under policy ultimatepoker-2026 v2 (was "
        "ultimatepoker-2026 v1): a live proposal must be prepared again — the operator "
        "dropped the cap"
    )
    with pytest.raises(Refused, match="computed under policy ultimatepoker-2026 v1, which is no"):
        proposals.approve_proposal(
            proposal, acting_user=other_manager, fingerprint=proposal.fingerprint
        )
    # Prepared again, it records the new version, and its fingerprint covers the new hash.
    again = proposals.prepare_proposal(proposal.incident, acting_user=support)
    assert (again.policy_id, again.policy_version_number) == ("ultimatepoker-2026", 2)
    assert again.policy_sha256 == uncapped.sha256
    assert again.fingerprint != proposal.fingerprint


def test_a_policy_change_needs_a_manager_a_reason_and_an_approved_version(
    support, manager, other_manager
):
    tournament = import_doc(support).tournament
    with pytest.raises(PermissionDenied):
        incidents.change_tournament_policy(
            tournament, _rollforward(), acting_user=support, reason="x"
        )
    with pytest.raises(Refused, match="reason"):
        incidents.change_tournament_policy(
            tournament, _rollforward(), acting_user=manager, reason=""
        )
    pending = proposed_policy_version(manager, first_place_cap=True)
    with pytest.raises(Refused, match="only an approved policy version"):
        incidents.change_tournament_policy(tournament, pending, acting_user=manager, reason="x")
    with pytest.raises(Refused, match="already under"):
        incidents.change_tournament_policy(
            tournament, tournament.policy_version, acting_user=manager, reason="x"
        )


def test_a_frozen_tournament_keeps_its_policy(support, manager, other_manager):
    proposal = submitted_proposal(support)
    proposals.approve_proposal(proposal, acting_user=manager, fingerprint=proposal.fingerprint)
    with pytest.raises(Refused, match="frozen"):
        incidents.change_tournament_policy(
            proposal.incident.tournament, _rollforward(), acting_user=other_manager, reason="x"
        )


def test_replay_recomputes_under_the_stored_version(support, manager, other_manager):
    proposal = draft_proposal(support)
    # Under a 4-hour window the failure would be a full refund: the replay must not use it.
    wide = approved_policy_version(
        other_manager,
        manager,
        doc=policy_doc("ultimatepoker-2026", **{"full_refund.within_minutes": 240}),
    )
    incidents.change_tournament_policy(
        proposal.incident.tournament, wide, acting_user=manager, reason="x"
    )
    result = proposals.replay_proposal(proposal)
    assert result.matches, result.differences
    assert proposal.rule == "not_in_the_money"


def test_replay_reads_the_stored_policy_document_not_a_parsed_copy_kept_in_memory(support, manager):
    """An auditor's replay in a long-running web process, after someone with the database's
    superuser rewrote the approved policy version's document (its SHA-256 column left as it
    was): the replay must see the document as stored now, not the parse kept since the
    proposal was prepared, and say that it no longer matches."""
    proposal = submitted_proposal(support)
    proposal = proposals.approve_proposal(
        proposal, acting_user=manager, fingerprint=proposal.fingerprint
    )
    assert proposals.replay_proposal(proposal).matches  # the parse is now kept in memory
    version = proposal.policy_version
    changed = version.document.replace(
        '"not_in_the_money":{"equal_share_percent":0',
        '"not_in_the_money":{"equal_share_percent":50',
    )
    assert changed != version.document
    with triggers_off():
        PolicyVersion.objects.filter(pk=version.pk).update(document=changed)
    proposal.refresh_from_db()
    result = proposals.replay_proposal(proposal)
    assert not result.matches
    assert any("no longer matches its SHA-256" in d for d in result.differences), result.differences


def test_the_rule_preview_names_the_policy_and_its_rule_1_condition(support):
    tournament = import_doc(support).tournament
    from django.utils import timezone

    preview = incidents.preview_rule(tournament, timezone.now() - timedelta(minutes=5))
    assert preview.policy.startswith("ultimatepoker-2026 v1: UltimatePoker.com")
    assert preview.condition == (
        "Full refund if play failed within 20 minutes of the start, or when management finds: "
        "General site issues impaired player performance throughout."
    )


def test_a_cancelled_incidents_rule_follows_the_new_policy(support, manager, other_manager):
    incident = cancelled_incident(support)
    assert incident.rule == "not_in_the_money"
    wide = approved_policy_version(
        other_manager,
        manager,
        doc=policy_doc("ultimatepoker-2026", **{"full_refund.within_minutes": 240}),
    )
    incidents.change_tournament_policy(incident.tournament, wide, acting_user=manager, reason="x")
    incident.refresh_from_db()
    # Failed 1 h 20 min after the start: within the new 4-hour window, rule 1.
    assert incident.rule == "full_refund"


# --------------------------------------------------------------------------------------------
# tournament.policy in the snapshot
# --------------------------------------------------------------------------------------------


def test_a_snapshot_naming_a_policy_gets_its_current_version(support):
    tournament = import_doc(support, policy="rollback-before-first-bust").tournament
    assert tournament.policy_version.label == "rollback-before-first-bust v1"


def test_a_snapshot_naming_an_unknown_policy_is_refused_naming_the_field(support):
    with pytest.raises(Refused) as refused:
        import_doc(support, policy="no-such-policy")
    assert "tournament.policy" in [field for field, _ in refused.value.problems]


# --------------------------------------------------------------------------------------------
# Outage mode: each tournament under its own policy
# --------------------------------------------------------------------------------------------


def test_the_batch_review_names_each_policy_and_a_changed_one_refuses_the_batch(
    support, manager, other_manager
):
    from refunds_admin.proposals import batches
    from tests.support.factories import approve_outage, prepared_outage

    outage = prepared_outage(support)
    rows = batches.review(outage)["rows"]
    assert {r["proposal"].policy_id for r in rows} == {"ultimatepoker-2026"}
    changed = next(r["tournament"] for r in rows if r["tournament"].external_id == "OUT-2")
    incidents.change_tournament_policy(
        changed, _rollforward(), acting_user=other_manager, reason="its published rules"
    )
    stale = {r["tournament"].external_id: r["stale"] for r in batches.review(outage)["rows"]}
    assert stale["OUT-1"] == [] and "no longer the tournament's" in stale["OUT-2"][0]
    with pytest.raises(Refused) as refused:
        approve_outage(outage, manager)
    (where, why), *_ = refused.value.problems
    assert where.startswith("OUT-2 (proposal") and "ultimatepoker-2026 v1" in why
    assert not PolicyVersion.objects.filter(proposals__status="approved").exists()
