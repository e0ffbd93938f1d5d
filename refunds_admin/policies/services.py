"""Policy versions: propose (a manager), approve (another manager, with a second factor), reject;
the default policy; reading which version applies.

Validation is the engine's `parse_policy` and nothing else (one validator): a refused document
names the field. A version's stored document is the engine's canonical JSON, so its `sha256` is
the very hash a proposal computed under it records.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from refunds_admin.accounts import mfa
from refunds_admin.accounts.credentials import why_not_own_credentials
from refunds_admin.accounts.roles import CAN_DECIDE, require_role
from refunds_admin.audit.services import record
from refunds_admin.errors import Refused, required_text
from refunds_admin.payouts.policy import DEFAULT_POLICY_ID, PRESETS, PolicyError, parse_policy
from refunds_admin.payouts.policy import Policy as EnginePolicy

from .models import DefaultPolicy, Policy, PolicyVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import User

Status = PolicyVersion.Status

# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------

# A version's document never changes once approved: its parsed form is cached by hash.


def engine_policy(version: PolicyVersion) -> EnginePolicy:
    """The engine's Policy for a stored version, parsed from its canonical JSON."""
    return version.engine()


def default_policy() -> Policy:
    return DefaultPolicy.objects.select_related("policy").get(pk=1).policy


def current_version(policy: Policy | str) -> PolicyVersion:
    """The policy's approved version with the highest number."""
    policy_id = policy if isinstance(policy, str) else policy.id
    found = (
        PolicyVersion.objects.filter(policy_id=policy_id, status=Status.APPROVED)
        .order_by("-version")
        .first()
    )
    if found is None:
        raise Refused(
            f"Policy {policy_id!r} has no approved version.",
            problems=[("tournament.policy", f"{policy_id!r} has no approved version")],
        )
    return found


def known_policy_ids() -> set[str]:
    """The ids a snapshot's `tournament.policy` may name: policies with an approved version."""
    return set(
        PolicyVersion.objects.filter(status=Status.APPROVED)
        .values_list("policy_id", flat=True)
        .distinct()
    )


def version_for_snapshot(policy_id: str | None) -> PolicyVersion:
    """What a tournament imported with `tournament.policy` = policy_id gets: that policy's
    current approved version, or without it the default policy's."""
    return current_version(policy_id or default_policy().id)


def previous_version(version: PolicyVersion) -> PolicyVersion | None:
    """The approved version this one follows (what its difference is shown against)."""
    return (
        PolicyVersion.objects.filter(
            policy_id=version.policy_id, version__lt=version.version, status=Status.APPROVED
        )
        .order_by("-version")
        .first()
    )


# --------------------------------------------------------------------------------------------
# Proposing
# --------------------------------------------------------------------------------------------


def _document_of(raw: bytes | str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(raw, dict):
        return dict(raw)
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise Refused(
            "The policy file is not UTF-8 text.", problems=[("document", "is not UTF-8")]
        ) from None
    except ValueError as e:
        raise Refused(
            "The policy file is not JSON.", problems=[("document", f"not JSON: {e}")]
        ) from None
    if not isinstance(data, dict):
        raise Refused(
            "The policy file is not a JSON object.",
            problems=[("document", "must be a JSON object")],
        )
    return data


def _facts(v: PolicyVersion) -> dict[str, Any]:
    return {"policy": v.policy_id, "version": v.version, "sha256": v.sha256, "status": v.status}


def policy_problems(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for each problem the engine finds in a policy document, or []."""
    try:
        parse_policy(document)
    except PolicyError as e:
        return [(p.field, p.message) for p in e.problems]
    return []


@transaction.atomic
def propose_policy_version(
    raw: bytes | str | dict[str, Any], *, acting_user: User
) -> PolicyVersion:
    """A manager proposes the next version of the policy the document names (a new id starts a
    new policy at version 1). The version number is assigned here: the next one. Refused,
    naming the field, unless the engine accepts the document; nothing is stored then."""
    require_role(acting_user, CAN_DECIDE, "propose policy versions")
    document = _document_of(raw)
    policy_id = document.get("id")
    next_number = 1
    if isinstance(policy_id, str) and Policy.objects.filter(id=policy_id).exists():
        # Locks the policy's row: two proposals of the same policy are numbered one after the other.
        Policy.objects.select_for_update().get(id=policy_id)
        next_number = (
            PolicyVersion.objects.filter(policy_id=policy_id).aggregate(v=Max("version"))["v"] or 0
        ) + 1
    # The number the document gave, if any, is replaced: told back to the proposer (the page).
    numbered_in_document = document.get("version")
    document["version"] = next_number
    try:
        parsed = parse_policy(document)
    except PolicyError as e:
        raise Refused(
            "The policy was refused; nothing was stored.",
            problems=[(p.field, p.message) for p in e.problems],
        ) from None
    pending = PolicyVersion.objects.filter(policy_id=parsed.id, status=Status.PROPOSED).first()
    if pending is not None:
        raise Refused(
            f"Version {pending.version} of {parsed.id} is waiting for a decision: approve or "
            "reject it before proposing another."
        )
    previous = PolicyVersion.objects.filter(policy_id=parsed.id, status=Status.APPROVED).first()
    if previous is not None and _same_rules(engine_policy(previous), parsed):
        raise Refused(
            f"This is exactly {previous.label}: nothing to propose.",
            problems=[("document", f"no field differs from {previous.label}")],
        )
    try:
        # A savepoint: a new policy or version proposed at the same time is reported, not a crash.
        with transaction.atomic():
            policy, _ = Policy.objects.get_or_create(id=parsed.id)
            version = PolicyVersion.objects.create(
                policy=policy,
                version=parsed.version,
                document=parsed.canonical_json().decode("utf-8"),
                sha256=parsed.sha256,
                title=parsed.title,
                status=Status.PROPOSED,
                proposed_by=acting_user,
                proposed_at=timezone.now(),
            )
    except IntegrityError:
        raise Refused(
            f"Another version of {parsed.id} was proposed at the same time; reload."
        ) from None
    record(
        "policy.version_proposed",
        version,
        actor=acting_user,
        after=_facts(version) | {"title": version.title},
    )
    version.numbered_in_document = numbered_in_document
    return version


def _same_rules(a: EnginePolicy, b: EnginePolicy) -> bool:
    da, db = a.document(), b.document()
    da.pop("version"), db.pop("version")
    return da == db


# --------------------------------------------------------------------------------------------
# Deciding
# --------------------------------------------------------------------------------------------


def _locked(version: PolicyVersion) -> PolicyVersion:
    return PolicyVersion.objects.select_for_update().get(pk=version.pk)


def _four_eyes(version: PolicyVersion, acting_user: User, doing: str) -> None:
    if version.proposed_by_id == acting_user.pk:
        raise PermissionDenied(
            f"{acting_user.get_username()} proposed {version.label}; another manager must "
            f"{doing} it (four eyes)."
        )
    # A sign-in someone else set is not a second pair of eyes (as for proposals).
    why_not = why_not_own_credentials(acting_user)
    if why_not:
        raise PermissionDenied(why_not)


def _require_proposed(version: PolicyVersion, doing: str) -> None:
    if version.status != Status.PROPOSED:
        raise Refused(
            f"{version.label} is {version.get_status_display().lower()}, not proposed: cannot "
            f"{doing} it."
        )


@transaction.atomic
def approve_policy_version(
    version: PolicyVersion, *, acting_user: User, sha256: str, code: str
) -> PolicyVersion:
    """Another manager than the proposer approves the version they read (quoting its SHA-256),
    with a current code from their authenticator app. From then on tournaments imported under
    this policy get it, and it never changes."""
    require_role(acting_user, CAN_DECIDE, "approve policy versions")
    fresh = _locked(version)
    _four_eyes(fresh, acting_user, "approve")
    _require_proposed(fresh, "approve")
    if (sha256 or "").strip().lower() != fresh.sha256:
        raise Refused(
            f"{fresh.label} is not the one you read: its SHA-256 is {fresh.sha256[:12]}…, you "
            f"quoted {(sha256 or '')[:12] or 'none'}. Read it again."
        )
    device = mfa.verify_code(acting_user, code)
    if device is None:
        raise Refused(
            "That code does not match your authenticator app (each code works once; wait for "
            "the next one).",
            problems=[("otp_token", "does not match the app's current code")],
        )
    changed = PolicyVersion.objects.filter(pk=fresh.pk, status=Status.PROPOSED).update(
        status=Status.APPROVED, approved_by=acting_user, approved_at=timezone.now()
    )
    if not changed:
        raise Refused(f"{fresh.label} was decided at the same time; reload it.")
    record(
        "policy.version_approved",
        fresh,
        actor=acting_user,
        before={"status": Status.PROPOSED},
        after=_facts(fresh) | {"status": Status.APPROVED, "second_factor": mfa.evidence(device)},
    )
    fresh.refresh_from_db()
    return fresh


@transaction.atomic
def reject_policy_version(
    version: PolicyVersion, *, acting_user: User, reason: str
) -> PolicyVersion:
    """Another manager than the proposer sends a proposed version back, with a reason."""
    require_role(acting_user, CAN_DECIDE, "reject policy versions")
    reason = required_text(reason, "reason")
    fresh = _locked(version)
    _four_eyes(fresh, acting_user, "decide on")
    _require_proposed(fresh, "reject")
    changed = PolicyVersion.objects.filter(pk=fresh.pk, status=Status.PROPOSED).update(
        status=Status.REJECTED,
        rejected_by=acting_user,
        rejected_at=timezone.now(),
        rejection_reason=reason,
    )
    if not changed:
        raise Refused(f"{fresh.label} was decided at the same time; reload it.")
    record(
        "policy.version_rejected",
        fresh,
        actor=acting_user,
        before={"status": Status.PROPOSED},
        after=_facts(fresh) | {"status": Status.REJECTED},
        reason=reason,
    )
    fresh.refresh_from_db()
    return fresh


@transaction.atomic
def set_default_policy(policy: Policy, *, acting_user: User) -> DefaultPolicy:
    """A manager names the policy that snapshots without `tournament.policy` get (its current
    approved version at each import). Tournaments already imported keep theirs."""
    require_role(acting_user, CAN_DECIDE, "set the default policy")
    current_version(policy)  # refused when it has no approved version
    row = DefaultPolicy.objects.select_for_update().get(pk=1)
    if row.policy_id == policy.id:
        raise Refused(f"{policy.id} is already the default policy.")
    before = row.policy_id
    changed = DefaultPolicy.objects.filter(pk=1, policy_id=before).update(
        policy=policy, changed_by=acting_user, changed_at=timezone.now()
    )
    if not changed:
        raise Refused("The default policy changed at the same time; reload.")
    row.refresh_from_db()
    record(
        "policy.default_set",
        row,
        actor=acting_user,
        before={"policy": before},
        after={"policy": policy.id},
    )
    return row


def load_presets(*, using: str = "default") -> None:
    """The engine's presets as approved version 1 of each policy, and the seed's as the
    default policy, where they are missing (migration 0002 and after a flush of a test
    database). Never changes a stored version."""
    now = timezone.now()
    with transaction.atomic(using=using):
        for preset in PRESETS.values():
            policy, _ = Policy.objects.using(using).get_or_create(id=preset.id)
            PolicyVersion.objects.using(using).get_or_create(
                policy=policy,
                version=preset.version,
                defaults={
                    "document": preset.canonical_json().decode("utf-8"),
                    "sha256": preset.sha256,
                    "title": preset.title,
                    "status": Status.APPROVED,
                    "proposed_at": now,
                    "approved_at": now,
                },
            )
        DefaultPolicy.objects.using(using).get_or_create(
            id=1, defaults={"policy_id": DEFAULT_POLICY_ID}
        )
