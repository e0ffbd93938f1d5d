from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from refunds_admin.accounts.mfa import money_decision
from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, CAN_READ, has_role
from refunds_admin.audit.display import describe
from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incident_services
from refunds_admin.incidents.models import Incident
from refunds_admin.payouts import FULL_REFUND
from refunds_admin.payouts.labels import rule_label
from refunds_admin.proposals import services as proposal_services
from refunds_admin.proposals.models import NOT_LIVE, PayoutProposal
from refunds_admin.tournaments.models import Tournament
from refunds_admin.tournaments.services import current_snapshot_row

from .. import queries
from ..access import get_incident_for, role_required
from ..forms import (
    IncidentForm,
    JustificationForm,
    ReasonForm,
    RestartAttemptForm,
    ResumedForm,
    incident_candidates,
)


@role_required(CAN_PREPARE)
@require_http_methods(["GET", "HEAD", "POST"])
def incident_new(request):
    refused = None
    if request.method == "POST":
        form = IncidentForm(request.POST)
        valid = form.is_valid()
        # Taken before a refusal's errors remove the failure time from cleaned_data.
        preview = _preview_for(form)
        if valid:
            try:
                incident = incident_services.record_incident(
                    form.cleaned_data["tournament"],
                    failed_at=form.cleaned_data["failed_at"],
                    cause=form.cleaned_data["cause"],
                    description=form.cleaned_data["description"],
                    acting_user=request.user,
                    before_start_confirmed=form.cleaned_data["before_start_confirmed"],
                )
            except Refused as exc:
                refused = exc
                _attach_problems(form, exc.problems)
            else:
                messages.success(request, f"Incident {incident.pk} recorded.")
                return redirect("incident_detail", pk=incident.pk)
    else:
        # Whole minutes: typing 06:20 into the form must not keep the seconds of "now".
        failed_at = timezone.localtime().replace(second=0, microsecond=0)
        initial = {"failed_at": failed_at}
        tournament = None
        if request.GET.get("tournament", "").isdigit():
            initial["tournament"] = request.GET["tournament"]
            tournament = incident_candidates().filter(pk=request.GET["tournament"]).first()
        form = IncidentForm(initial=initial)
        # Pre-filled: the preview shows the rule at once, not only after the first keystroke.
        preview = _preview(tournament, failed_at)
        return render(request, "web/incident_form.html", {"form": form, "preview": preview})
    return render(
        request,
        "web/incident_form.html",
        {"form": form, "refused": refused, "preview": preview},
        status=400,
    )


@role_required(CAN_PREPARE)
@vary_on_headers("HX-Request")
def incident_preview(request):
    """htmx: the rule the typed failure time selects, and why, before anything is saved."""
    form = IncidentForm(request.GET)
    form.is_valid()  # partial input is fine: the preview needs only tournament and failed_at
    return render(
        request,
        "web/incident_form.html#preview",
        {"preview": _preview_for(form), "form": form},
    )


def _preview_for(form):
    data = getattr(form, "cleaned_data", None) or {}
    return _preview(data.get("tournament"), data.get("failed_at"))


def _preview(tournament, failed_at):
    if not isinstance(tournament, Tournament) or failed_at is None:
        return None
    try:
        result = incident_services.preview_rule(tournament, failed_at)
    except Refused as exc:
        return {"error": str(exc)}
    return {
        "rule": result.rule,
        "sentence": result.sentence,
        "before_start": result.before_start,
        "policy": result.policy,
        "condition": result.condition,
        "full_refund": result.full_refund,
        "entries": result.entries,
    }


@role_required(CAN_READ)
def incident_detail(request, pk):
    return _incident_page(request, get_incident_for(request, pk))


def _timeline(incident, attempts):
    """The incident's story in time order: start, failure, restart attempts (once each, from
    their own rows) and the audit's sentences for the tournament."""
    items = [
        (incident.tournament.starts_at, 0, "play started", ""),
        (incident.failed_at, 1, f"play failed ({incident.get_cause_display()})", "failed"),
    ]
    for a in attempts:
        outcome = "succeeded" if a.succeeded else "failed"
        note = f": {a.note}" if a.note else ""
        items.append(
            (
                a.attempted_at,
                2,
                f"restart attempt {outcome}{note} (logged by {a.recorded_by.get_username()})",
                "",
            )
        )
    events = AuditEvent.objects.filter(
        tournament_external_id=incident.tournament.external_id
    ).exclude(action="incident.restart_attempt")
    items += [(e.created_at, 3, describe(e), "") for e in events.order_by("created_at", "id")]
    items.sort(key=lambda item: (item[0], item[1]))
    return [{"when": when, "text": text, "kind": kind} for when, _, text, kind in items]


@role_required(CAN_READ)
@vary_on_headers("HX-Request")
def incident_snapshot_changes(request, pk):
    """What a re-import changed since the incident was recorded, compared now if nobody has
    yet: for htmx, the incident page's section alone (the page fetches it once drawn, when the
    two versions are large: queries.COMPARED_WHILE_DRAWN); otherwise the whole page with it
    (the section's link, for a browser that runs no script)."""
    incident = get_incident_for(request, pk)
    if not request.htmx:
        return _incident_page(request, incident, wait_for_changes=True)
    changes = queries.snapshot_changes(
        queries.snapshot_at_recording(incident), current_snapshot_row(incident.tournament)
    )
    return render(
        request,
        "web/incident_detail.html#snapshot-changes",
        {"incident": incident, "tournament": incident.tournament, "snapshot_changes": changes},
    )


def _incident_page(request, incident, *, refused_form=None, status=200, wait_for_changes=False):
    """The incident page; after a refused action, `refused_form` ({context name: bound form})
    shows that form again with its errors, and `status` is 400. What a re-import changed is
    compared while the page is drawn only for small snapshots or `wait_for_changes`; otherwise
    the page fetches it after (incident_snapshot_changes), unless it was compared already."""
    proposals = list(
        incident.proposals.select_related("prepared_by", "submitted_by", "approved_by").order_by(
            "version"
        )
    )
    attempts = list(incident.restart_attempts.select_related("recorded_by"))
    user = request.user
    is_open = incident.status == Incident.Status.OPEN
    live = next((p for p in proposals if p.status not in NOT_LIVE), None)
    now = timezone.now()
    at_recording = queries.snapshot_at_recording(incident)
    current = current_snapshot_row(incident.tournament)
    policy_version = incident.tournament.policy_version
    context = {
        "incident": incident,
        "tournament": incident.tournament,
        # Which policy applies and why the rule follows; its words for management's finding.
        "policy_version": policy_version,
        "policy": policy_version.engine(),
        "attempts": attempts,
        "proposals": proposals,
        "live_proposal": live,
        "timeline": _timeline(incident, attempts),
        "snapshot_changes": queries.snapshot_changes(at_recording, current, wait=wait_for_changes),
        "overdue": is_open and now > incident.deadline,
        # What this user may do now (the services check again when it is done).
        "may_log_restart": is_open and has_role(user, CAN_PREPARE),
        "may_mark_resumed": is_open and has_role(user, CAN_PREPARE),
        "may_declare_not_resumable": is_open and has_role(user, CAN_DECIDE),
        "may_cancel_after_window": is_open
        and now > incident.deadline
        and has_role(user, CAN_PREPARE),
        "may_confirm_site_wide": incident.status != Incident.Status.RESUMED
        and not incident.site_wide_issue
        and has_role(user, CAN_DECIDE)
        and (live is None or live.status in (PayoutProposal.Status.DRAFT,)),
        # A submission waits for its manager; once it is out of date (it can no longer be
        # approved), preparing again is the way on, and supersedes it.
        "may_prepare": incident.status == Incident.Status.CANCELLED
        and has_role(user, CAN_PREPARE)
        and (
            live is None
            or live.status == PayoutProposal.Status.DRAFT
            or (
                live.status == PayoutProposal.Status.SUBMITTED
                and bool(proposal_services.out_of_date_reasons(live))
            )
        ),
        "restart_form": RestartAttemptForm(initial={"attempted_at": _now_local()}),
        "resumed_form": ResumedForm(initial={"resumed_at": _now_local()}),
        "reason_form": ReasonForm(),
        "justification_form": JustificationForm(),
    }
    context.update(refused_form or {})
    for key, form in (refused_form or {}).items():
        if not context[_SHOWN_BY[key]]:
            # The form is not drawn any more (the incident moved on: a second tab, Back and
            # resubmit): its errors go above the page, or the 400 would say nothing. Away from
            # its field, an error names the field ("Attempted at: Enter a valid date/time.").
            for field, errors in form.errors.items():
                label = form.fields[field].label if field in form.fields else None
                for error in errors:
                    messages.error(request, f"{label}: {error}" if label else error)
    return render(request, "web/incident_detail.html", context, status=status)


# Which of the page's "may" flags draws each action's form (incident_detail.html).
_SHOWN_BY = {
    "restart_form": "may_log_restart",
    "resumed_form": "may_mark_resumed",
    "reason_form": "may_declare_not_resumable",
    "justification_form": "may_confirm_site_wide",
}


def _now_local():
    return timezone.localtime().replace(second=0, microsecond=0)


def _act(request, pk, service, done, form_class=None, form_key=""):
    """Run one incident action (its view checked the role): validate the form, call the service
    with the form's fields as its keyword arguments; on a refusal show the page again with the
    message next to the form (or, for a plain button, as a message)."""
    incident = get_incident_for(request, pk)
    form = form_class(request.POST) if form_class else None
    if form is None or form.is_valid():
        try:
            service(incident, **(form.cleaned_data if form else {}), acting_user=request.user)
        except Refused as exc:
            if form is None:
                messages.error(request, exc.message)
                return redirect("incident_detail", pk=pk)
            form.add_error(None, exc.message)
            _attach_problems(form, exc.problems)
        else:
            messages.success(request, done)
            return redirect("incident_detail", pk=pk)
    return _incident_page(request, incident, refused_form={form_key: form}, status=400)


def _attach_problems(form, problems):
    """Each (field, message) next to its field, or above the form when it names none of them."""
    for where, what in problems:
        form.add_error(where if where in form.fields else None, what)


@role_required(CAN_PREPARE)
@require_POST
def incident_restart(request, pk):
    return _act(
        request,
        pk,
        incident_services.log_restart_attempt,
        "Restart attempt logged.",
        RestartAttemptForm,
        "restart_form",
    )


@role_required(CAN_PREPARE)
@require_POST
def incident_resumed(request, pk):
    return _act(
        request,
        pk,
        incident_services.mark_resumed,
        "Play resumed: the incident is closed with no payout.",
        ResumedForm,
        "resumed_form",
    )


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def incident_not_resumable(request, pk):
    return _act(
        request,
        pk,
        incident_services.declare_not_resumable,
        "Declared not resumable: the tournament is cancelled.",
        ReasonForm,
        "reason_form",
    )


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def incident_site_wide(request, pk):
    return _act(
        request,
        pk,
        incident_services.confirm_site_wide_issue,
        f"Management's finding confirmed: {rule_label(FULL_REFUND)} applies.",
        JustificationForm,
        "justification_form",
    )


@role_required(CAN_PREPARE)
@require_POST
def incident_cancel(request, pk):
    return _act(
        request,
        pk,
        incident_services.cancel_after_window,
        "The 30 minutes passed without resumption: the tournament is cancelled.",
    )


@role_required(CAN_PREPARE)
@require_POST
def incident_prepare(request, pk):
    incident = get_incident_for(request, pk)
    try:
        # As the page offers it: never over a current submission (the page may be stale).
        proposal = proposal_services.prepare_proposal(
            incident, acting_user=request.user, keep_current_submission=True
        )
    except Refused as exc:
        messages.error(request, f"The proposal could not be prepared: {exc}")
        if isinstance(exc, proposal_services.RulesCannotApply):
            messages.warning(request, _when_the_rules_cannot_apply(request.user, incident))
        return redirect("incident_detail", pk=pk)
    messages.success(request, f"Proposal version {proposal.version} prepared.")
    return redirect("proposal_detail", pk=proposal.pk)


def _when_the_rules_cannot_apply(user, incident):
    """What staff can do when the policy's rules refuse the snapshot (docs/policies.md): a
    manager puts the tournament under a version that can be applied, or confirms management's
    finding (rule 1 pays back what was paid, whatever the pool); a wrong prize table is
    corrected by importing the snapshot again. Each where it is done, for this person's role."""
    manager = has_role(user, CAN_DECIDE)
    tournament = incident.tournament
    policy_link = format_html(
        '<a href="{}#tournament-policy-form">Change the policy</a> on the tournament page',
        reverse("tournament_detail", args=[tournament.pk]),
    )
    finding = tournament.policy_version.engine().management_finding
    if not finding or incident.site_wide_issue:
        confirm = ""
    elif manager:
        confirm = format_html(
            ", or, if management finds “{}”, confirm that finding "
            '(<a href="#finding-form">Confirm management\'s finding</a> on this page) so that '
            "{} applies",
            finding,
            rule_label(FULL_REFUND),
        )
    else:
        confirm = format_html(
            ", or, if management finds “{}”, confirm that finding (Confirm "
            "management's finding, on this incident page) so that {} applies",
            finding,
            rule_label(FULL_REFUND),
        )
    who = (
        "Decide how these players are paid: you can"
        if manager
        else "Ask a manager to decide how these players are paid: a manager can"
    )
    return format_html(
        '<span id="refused-next-step">{} put the tournament under a policy version that can be '
        "applied ({}){}. If the snapshot's prize table is wrong, import the corrected snapshot "
        '(<a href="{}">Import a snapshot</a>). Then prepare the proposal again.</span>',
        who,
        policy_link,
        confirm,
        reverse("tournament_import"),
    )
