"""Cancellation policies: the list (the default marked), a version as a readable table with its
difference from the version before, proposing (upload or fields), approving (another manager,
with a code) or rejecting, and the default. Thin: the policy services decide."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from refunds_admin.accounts import mfa
from refunds_admin.accounts.mfa import money_decision
from refunds_admin.accounts.roles import CAN_DECIDE, CAN_READ, has_role
from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incident_services
from refunds_admin.policies import describe
from refunds_admin.policies import services as policy_services
from refunds_admin.policies.models import Policy, PolicyVersion

from ..access import get_tournament_for, role_required
from ..policy_forms import (
    PolicyApproveForm,
    PolicyFieldsForm,
    PolicyRejectForm,
    PolicyUploadForm,
    TournamentPolicyForm,
)

Status = PolicyVersion.Status


@role_required(CAN_READ)
def policy_list(request):
    default = policy_services.default_policy()
    policies = Policy.objects.annotate(
        tournaments=Count("versions__tournaments", distinct=True),
        pending=Count("versions", filter=Q(versions__status=Status.PROPOSED)),
    )
    rows = []
    for policy in policies:
        current = policy.current_version()
        rows.append(
            {
                "policy": policy,
                "current": current,
                "engine": current.engine() if current else None,
                "pending": policy.versions.filter(status=Status.PROPOSED).first()
                if policy.pending
                else None,
                "is_default": policy.id == default.id,
            }
        )
    return render(
        request,
        "web/policy_list.html",
        {"rows": rows, "default": default, "may_decide": has_role(request.user, CAN_DECIDE)},
    )


def _say_why_nothing_was_decided(request, version, form, refused):
    """A decision posted where this person can make none (a second tab, Back and resubmit, their
    own version): the decision's form is not drawn (nor, once the version is decided, the
    refusal beside it), so the 400 would say nothing. The reason goes above the page instead."""
    if version.status == Status.PROPOSED and refused:
        return  # the decision section shows it
    if refused is None and (form is None or not form.is_bound or not form.errors):
        return  # nothing was posted
    if version.status != Status.PROPOSED:
        why = (
            f"{version.label} is already {version.get_status_display().lower()}: nothing to decide."
        )
    elif version.proposed_by_id == request.user.pk:
        why = "You proposed this version: another manager approves or rejects it (four eyes)."
    else:
        why = refused or "; ".join(error for errors in form.errors.values() for error in errors)
    messages.error(request, f"Not done: {why}")


def _version_page(
    request, version, *, approve_form=None, reject_form=None, refused=None, status=200
):
    policy = version.engine()
    previous = policy_services.previous_version(version)
    user = request.user
    may_decide = (
        version.status == Status.PROPOSED
        and has_role(user, CAN_DECIDE)
        and user.pk != version.proposed_by_id
    )
    if not may_decide:
        _say_why_nothing_was_decided(request, version, approve_form or reject_form, refused)
    versions = list(version.policy.versions.select_related("proposed_by", "approved_by"))
    # One version of a policy waits for a decision at a time: proposing the next one is
    # refused until then, so the page says so rather than offering the form.
    waiting = next((v for v in versions if v.status == Status.PROPOSED), None)
    # The badge "default policy" belongs to the version in force (the default policy's current
    # approved version), not to a proposed, rejected or earlier version of that policy.
    of_default_policy = policy_services.default_policy().id == version.policy_id
    in_force = max(
        (v for v in versions if v.status == Status.APPROVED),
        key=lambda v: v.version,
        default=None,
    )
    return render(
        request,
        "web/policy_version.html",
        {
            "version": version,
            "policy": policy,
            "rows": describe.rows(policy),
            "condition": describe.full_refund_condition(policy),
            "previous": previous,
            "changes": describe.differences(previous.engine() if previous else None, policy),
            "versions": versions,
            "waiting": waiting,
            "is_default": of_default_policy and in_force is not None and in_force.pk == version.pk,
            "of_default_policy": of_default_policy,
            "in_force": in_force,
            "may_decide": may_decide,
            "own_version": version.proposed_by_id == user.pk,
            "may_propose": has_role(user, CAN_DECIDE) and waiting is None,
            "has_device": mfa.confirmed_device(user) is not None,
            "approve_form": approve_form
            or PolicyApproveForm(initial={"sha256": version.sha256}, user=user, request=request),
            "reject_form": reject_form or PolicyRejectForm(),
            "refused": refused,
            "tournaments": version.tournaments.order_by("-starts_at")[:20],
        },
        status=status,
    )


def _get_version(pk):
    return get_object_or_404(
        PolicyVersion.objects.select_related("policy", "proposed_by", "approved_by", "rejected_by"),
        pk=pk,
    )


@role_required(CAN_READ)
def policy_version_detail(request, pk):
    return _version_page(request, _get_version(pk))


@role_required(CAN_DECIDE)
@require_http_methods(["GET", "HEAD", "POST"])
@money_decision
def policy_propose(request):
    """A new version of a policy (or a new policy), from a file or from its fields."""
    based_on = None
    if request.GET.get("from", "").isdigit():
        based_on = PolicyVersion.objects.filter(pk=int(request.GET["from"])).first()
    upload_form = PolicyUploadForm()
    fields_form = PolicyFieldsForm(
        initial=PolicyFieldsForm.initial_from(based_on) if based_on else None
    )
    refused = None
    if request.method == "POST":
        by_file = request.POST.get("how") == "file"
        if by_file:
            upload_form = PolicyUploadForm(request.POST, request.FILES)
            valid = upload_form.is_valid()
        else:
            fields_form = PolicyFieldsForm(request.POST)
            valid = fields_form.is_valid()
            if not valid:
                fields_form.add_other_problems()
        if valid:
            raw = upload_form.cleaned_data["file"].read() if by_file else fields_form.document()
            try:
                version = policy_services.propose_policy_version(raw, acting_user=request.user)
            except Refused as exc:
                refused = exc
                if not by_file:
                    for where, what in exc.problems:
                        name = PolicyFieldsForm.FIELD_OF.get(where, where)
                        if name in fields_form.fields:
                            fields_form.add_error(name, what)
            else:
                renumbered = ""
                given = version.numbered_in_document
                # Typed fields carry no number of their own: only a file can have said one.
                if by_file and isinstance(given, int) and given != version.version:
                    renumbered = (
                        f" The file said version {given}; versions are numbered by the app, one "
                        f"after the other, so this one is numbered v{version.version}."
                    )
                messages.success(
                    request,
                    f"{version.label} proposed: another manager approves it with a code from "
                    f"their authenticator app.{renumbered}",
                )
                return redirect("policy_version_detail", pk=version.pk)
    return render(
        request,
        "web/policy_propose.html",
        {
            "upload_form": upload_form,
            "fields_form": fields_form,
            "based_on": based_on,
            "refused": refused,
        },
        status=400 if refused else 200,
    )


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def policy_version_approve(request, pk):
    version = _get_version(pk)
    form = PolicyApproveForm(request.POST, user=request.user, request=request)
    if not form.is_valid():
        return _version_page(request, version, approve_form=form, status=400)
    try:
        policy_services.approve_policy_version(
            version,
            acting_user=request.user,
            sha256=form.cleaned_data["sha256"],
            code=form.cleaned_data["otp_token"],
        )
    except Refused as exc:
        for where, what in exc.problems:
            if where in form.fields:
                form.add_error(where, what)
        return _version_page(request, version, approve_form=form, refused=exc.message, status=400)
    except PermissionDenied as exc:
        return _version_page(request, version, approve_form=form, refused=str(exc), status=403)
    messages.success(request, f"{version.label} approved.")
    return redirect("policy_version_detail", pk=pk)


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def policy_version_reject(request, pk):
    version = _get_version(pk)
    form = PolicyRejectForm(request.POST)
    if not form.is_valid():
        return _version_page(request, version, reject_form=form, status=400)
    try:
        policy_services.reject_policy_version(
            version, acting_user=request.user, reason=form.cleaned_data["reason"]
        )
    except Refused as exc:
        return _version_page(request, version, reject_form=form, refused=exc.message, status=400)
    except PermissionDenied as exc:
        return _version_page(request, version, reject_form=form, refused=str(exc), status=403)
    messages.success(request, f"{version.label} rejected.")
    return redirect("policy_version_detail", pk=pk)


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def policy_set_default(request, policy_id):
    policy = get_object_or_404(Policy, pk=policy_id)
    try:
        policy_services.set_default_policy(policy, acting_user=request.user)
    except Refused as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"{policy.id} is the default policy: snapshots without tournament.policy get it.",
        )
    return redirect("policy_list")


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def tournament_policy(request, pk):
    """A manager puts the tournament under another policy version, with a reason."""
    tournament = get_tournament_for(request, pk)
    form = TournamentPolicyForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(
                request,
                f"{form.fields[field].label if field in form.fields else field}: {' '.join(map(str, errors))}",
            )
        return redirect("tournament_detail", pk=pk)
    try:
        incident_services.change_tournament_policy(
            tournament,
            form.cleaned_data["version"],
            acting_user=request.user,
            reason=form.cleaned_data["reason"],
        )
    except Refused as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Tournament {tournament.external_id} now runs under "
            f"{form.cleaned_data['version'].label}. A proposal prepared before must be prepared "
            "again.",
        )
    return redirect("tournament_detail", pk=pk)
