"""Outage pages: record one failure across many tournaments, run its window, prepare, review and
approve every proposal at once, follow the posting, read the report. Thin: the services decide."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from refunds_admin.accounts.mfa import (
    decision_refusal,
    evidence,
    money_decision,
    needs_device,
    session_verified,
)
from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, CAN_READ, has_role
from refunds_admin.audit.display import describe
from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incident_services
from refunds_admin.incidents.models import Incident
from refunds_admin.outages import services as outage_services
from refunds_admin.outages.models import Outage
from refunds_admin.payouts.labels import rule_label
from refunds_admin.payouts.money import display, format_cents
from refunds_admin.proposals import batches
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.reports import outages as outage_reports
from refunds_admin.tournaments.models import Tournament
from refunds_admin.web.templatetags.staff import elapsed_words

from ..access import get_outage_for, role_required
from ..downloads import INTEGER, MONEY, TEXT, TIMESTAMP, csv_download, csv_writer, xlsx_download
from ..forms import ApproveForm, JustificationForm, ReasonForm, RejectForm
from ..outage_forms import AddTournamentForm, OutageForm, OutageResumedForm
from ..paging import Column, KeysetPage

CANDIDATES_SHOWN = 500
RULES_PREVIEWED = 50


def _now_local():
    # Whole minutes, as on the incident form: typing 14:05 must not keep the seconds of "now".
    return timezone.localtime().replace(second=0, microsecond=0)


OUTAGE_COLUMNS = [
    Column("outage", "Outage", ("id",), descending_first=True),
    Column("failed", "Failed at", ("failed_at",), descending_first=True),
    Column("cause", "Cause", ("cause",)),
    Column("tournaments", "Tournaments", ("tournaments",), numeric=True, descending_first=True),
    Column("site_wide", "Site-wide", ("site_wide_issue",), descending_first=True),
    Column("recorded_by", "Recorded by", ("recorded_by__username",)),
]


@role_required(CAN_READ)
def outage_list(request):
    """Every outage, 50 a page, the latest failure first."""
    page = KeysetPage(
        request.GET,
        Outage.objects.select_related("recorded_by").annotate(tournaments=Count("members")),
        OUTAGE_COLUMNS,
        default="-failed",
        noun="outages",
    )
    rows = [(o, o.tournaments) for o in page.rows]
    return render(request, "web/outage_list.html", {"rows": rows, "page": page})


# --------------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------------


def _candidates_context(form):
    """The tournaments running at the typed failure time (matching the search), and those already
    chosen (always listed, so a search never drops a choice)."""
    data = getattr(form, "cleaned_data", None) or {}
    failed_at = data.get("failed_at")
    chosen = list(data.get("tournaments") or [])
    if failed_at is None:
        return {"candidates": [], "chosen_ids": set(), "failed_at": None, "running": 0}
    running = outage_services.tournaments_running_at(failed_at)
    matching = list(
        outage_services.tournaments_running_at(failed_at, data.get("q", ""))[:CANDIDATES_SHOWN]
    )
    chosen_ids = {t.pk for t in chosen}
    shown = {m.pk for m in matching}
    # Ticked but not matching the search: still listed (first), with their snapshot.
    kept = list(
        Tournament.objects.filter(pk__in=chosen_ids - shown)
        .select_related("current_snapshot")
        .defer("current_snapshot__document_zlib", "current_snapshot__parsed")
        .order_by("external_id")
    )
    listed = kept + matching
    # The rule each tournament would get, as on the single incident form: each costs reading
    # its stored snapshot, so only for a list short enough to read.
    if len(listed) <= RULES_PREVIEWED:
        for t in listed:
            try:
                t.rule_preview = incident_services.preview_rule(t, failed_at).rule
            except Refused as exc:
                t.rule_problem = exc.message
    return {
        "candidates": listed,
        "chosen_ids": chosen_ids,
        "failed_at": failed_at,
        "running": running.count(),
        "truncated": len(matching) >= CANDIDATES_SHOWN,
        "rules_previewed": len(listed) <= RULES_PREVIEWED,
    }


@role_required(CAN_PREPARE)
@require_http_methods(["GET", "HEAD", "POST"])
def outage_new(request):
    refused = None
    if request.method == "POST":
        form = OutageForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                outage = outage_services.record_outage(
                    failed_at=data["failed_at"],
                    cause=data["cause"],
                    description=data["description"],
                    people_involved=data["people_involved"],
                    tournaments=list(data["tournaments"]),
                    acting_user=request.user,
                )
            except Refused as exc:
                refused = exc
            else:
                messages.success(
                    request,
                    f"Outage {outage.pk} recorded for {outage.members.count()} tournaments.",
                )
                return redirect("outage_detail", pk=outage.pk)
        probe = form
    else:
        data = request.GET.copy()
        data.setdefault("failed_at", _now_local().strftime("%Y-%m-%dT%H:%M"))
        data.setdefault("cause", Incident.Cause.SERVER_CRASH)
        probe = OutageForm(data)
        probe.is_valid()  # only to read the failure time for the candidates
        form = OutageForm(initial={k: data.get(k) for k in OutageForm.base_fields if k in data})
    context = {"form": form, "refused": refused, **_candidates_context(probe)}
    return render(
        request,
        "web/outage_form.html",
        context,
        status=400 if request.method == "POST" else 200,
    )


@role_required(CAN_PREPARE)
def outage_candidates(request):
    """htmx: the tournaments running at the typed failure time, searchable."""
    form = OutageForm(request.GET)
    form.is_valid()
    return render(request, "web/outage_form.html#candidates", _candidates_context(form))


# --------------------------------------------------------------------------------------------
# The outage page: the window and the decisions
# --------------------------------------------------------------------------------------------


def _detail_context(request, outage):
    incidents = list(
        outage_services.incidents_of(outage).select_related(
            "closed_by", "tournament__policy_version"
        )
    )
    user = request.user
    now = timezone.now()
    open_ = [i for i in incidents if i.status == Incident.Status.OPEN]
    cancelled = [i for i in incidents if i.status == Incident.Status.CANCELLED]
    proposals = {p.incident_id: p for p in batches.live_proposals(outage)}
    events = [
        (e, describe(e))
        for e in AuditEvent.objects.filter(object_type="outage", object_id=str(outage.pk)).order_by(
            "created_at", "id"
        )
    ]
    candidates = outage_services.tournaments_running_at(outage.failed_at)
    return {
        "outage": outage,
        "rows": [(i, proposals.get(i.pk)) for i in incidents],
        "open_count": len(open_),
        "cancelled_count": len(cancelled),
        "overdue": bool(open_) and now > outage.deadline,
        "in_window": now <= outage.deadline,
        "events": events,
        "prepare": batches.prepare_progress(outage),
        "may_mark_resumed": bool(open_) and has_role(user, CAN_PREPARE),
        "may_declare": bool(open_) and has_role(user, CAN_DECIDE),
        "may_cancel_rest": bool(open_) and now > outage.deadline and has_role(user, CAN_PREPARE),
        "may_confirm_site_wide": not outage.site_wide_issue and has_role(user, CAN_DECIDE),
        "may_add": bool(open_) and has_role(user, CAN_PREPARE),
        "may_prepare": bool(cancelled) and has_role(user, CAN_PREPARE),
        # Everyone may open the batch review; only a manager approves there.
        "may_decide": has_role(user, CAN_DECIDE),
        "resumed_form": OutageResumedForm(initial={"resumed_at": _now_local()}),
        "reason_form": ReasonForm(),
        "justification_form": JustificationForm(),
        # Each tournament runs under its own policy: management's finding in each one's words.
        "findings": sorted(
            {
                (
                    i.tournament.policy_version.label,
                    i.tournament.policy_version.engine().management_finding,
                )
                for i in incidents
            }
        ),
        "add_form": AddTournamentForm(candidates=candidates),
    }


@role_required(CAN_READ)
def outage_detail(request, pk):
    outage = get_outage_for(request, pk)
    return render(request, "web/outage_detail.html", _detail_context(request, outage))


def _act(request, pk, roles, perform, done):
    """Run one outage action; a refusal comes back as a message naming every tournament."""
    outage = get_outage_for(request, pk)
    if not has_role(request.user, roles):
        raise PermissionDenied
    try:
        perform(outage)
    except Refused as exc:
        _refused_messages(request, exc)
    else:
        messages.success(request, done)
    return redirect("outage_detail", pk=pk)


def _refused_messages(request, exc):
    """The refusal, then each problem on its own line ("Play resumed at: enter a valid...")."""
    messages.error(request, exc.message)
    for where, what in exc.problems:
        messages.error(request, f"{where}: {what}")


def _form_or_refuse(form):
    if not form.is_valid():
        # Named as the form names them ("Play resumed at"), not by their code ("resumed_at").
        problems = [
            (form.fields[k].label if k in form.fields else "Form", " ".join(v))
            for k, v in form.errors.items()
        ]
        raise Refused("Check the form.", problems=problems)
    return form.cleaned_data


@role_required(CAN_PREPARE)
@require_POST
def outage_resumed(request, pk):
    def perform(outage):
        ids = [i.pk for i in outage_services.incidents_of(outage)]
        data = _form_or_refuse(OutageResumedForm(request.POST, incident_ids=ids))
        if not data["incidents"]:
            # In the page's words, not the service's field name ("incidents: none chosen").
            raise Refused(
                "No tournament was ticked, so nothing was marked resumed. Tick the tournaments "
                "where play resumed (the Resumed? column), then press "
                "“Mark the ticked tournaments resumed”."
            )
        outage_services.mark_resumed(
            outage, data["incidents"], resumed_at=data["resumed_at"], acting_user=request.user
        )

    return _act(request, pk, CAN_PREPARE, perform, "Play resumed on the chosen tournaments.")


def _decide_with_text(request, pk, form_class, field, decide, done):
    """A manager's decision that needs one written field (a reason, a justification)."""

    def perform(outage):
        data = _form_or_refuse(form_class(request.POST))
        decide(outage, **{field: data[field]}, acting_user=request.user)

    return _act(request, pk, CAN_DECIDE, perform, done)


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def outage_not_resumable(request, pk):
    return _decide_with_text(
        request,
        pk,
        ReasonForm,
        "reason",
        outage_services.declare_rest_not_resumable,
        "Declared not resumable: every tournament still open is cancelled.",
    )


@role_required(CAN_PREPARE)
@require_POST
def outage_cancel_rest(request, pk):
    def perform(outage):
        outage_services.cancel_rest_after_window(outage, acting_user=request.user)

    return _act(
        request,
        pk,
        CAN_PREPARE,
        perform,
        "The 30 minutes passed: every tournament still open is cancelled.",
    )


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def outage_site_wide(request, pk):
    return _decide_with_text(
        request,
        pk,
        JustificationForm,
        "justification",
        outage_services.confirm_site_wide_issue,
        "Site-wide issue confirmed: rule 1 (full refund) applies to every tournament.",
    )


@role_required(CAN_PREPARE)
@require_POST
def outage_add(request, pk):
    # Support staff add tournaments to an outage; once a manager confirmed its site-wide finding,
    # adding one applies that finding, a money decision: a manager's, from a session signed in
    # with both factors (the service checks again under the outage's lock).
    outage = get_outage_for(request, pk)
    if outage.site_wide_issue and needs_device(request.user):
        refusal = decision_refusal(request)
        if refusal is not None:
            return refusal

    def perform(outage):
        candidates = outage_services.tournaments_running_at(outage.failed_at)
        data = _form_or_refuse(AddTournamentForm(request.POST, candidates=candidates))
        outage_services.add_tournament(
            outage,
            data["tournament"],
            acting_user=request.user,
            second_factor=session_verified(request),
        )

    return _act(request, pk, CAN_PREPARE, perform, "Tournament added to the outage.")


# --------------------------------------------------------------------------------------------
# Batch prepare
# --------------------------------------------------------------------------------------------


@role_required(CAN_PREPARE)
@require_POST
def outage_prepare(request, pk):
    def perform(outage):
        batches.start_prepare(outage, acting_user=request.user)
        # Without a worker the run has finished already: say so, not "preparing".
        progress = batches.prepare_progress(outage)
        if progress is not None and not progress["active"]:
            done[0] = "Every proposal is prepared: see the result for each tournament below."

    done = ["Preparing every proposal: follow the progress below."]
    outage = get_outage_for(request, pk)
    if not has_role(request.user, CAN_PREPARE):
        raise PermissionDenied
    try:
        perform(outage)
    except Refused as exc:
        _refused_messages(request, exc)
    else:
        messages.success(request, done[0])
    return redirect("outage_detail", pk=pk)


@role_required(CAN_READ)
def outage_prepare_progress(request, pk):
    """htmx: the batch prepare's progress bar and per-tournament results, polled while it runs."""
    outage = get_outage_for(request, pk)
    prepare = batches.prepare_progress(outage)
    response = render(
        request, "web/outage_detail.html#prepare", {"outage": outage, "prepare": prepare}
    )
    if request.htmx and prepare is not None and not prepare["active"]:
        # Finished: reload the whole page, so that the tournaments show their proposals.
        response["HX-Refresh"] = "true"
    return response


# --------------------------------------------------------------------------------------------
# Batch review and approval
# --------------------------------------------------------------------------------------------


def _only(request):
    ids = [int(x) for x in request.GET.getlist("only") if x.isdigit()]
    return ids or None


def _seen(request):
    seen = {}
    for value in request.POST.getlist("seen"):
        pk, _, fingerprint = value.partition(":")
        if pk.isdigit():
            seen[int(pk)] = fingerprint
    return seen


@role_required(CAN_READ)
@require_http_methods(["GET", "HEAD", "POST"])
@money_decision
def outage_review(request, pk):
    """Every proposal of the outage on one page; a manager approves all of them (or the selection
    reviewed with ?only=...) with their password, quoting the outage fingerprint shown."""
    outage = get_outage_for(request, pk)
    only = _only(request)
    refused = None
    status = 200
    approve_form = ApproveForm(user=request.user, request=request)
    if request.method == "POST":
        if not has_role(request.user, CAN_DECIDE):
            raise PermissionDenied("Only a manager may approve proposals.")
        approve_form = ApproveForm(request.POST, user=request.user, request=request)
        status = 400
        if approve_form.is_valid():
            try:
                batches.approve_batch(
                    outage,
                    seen=_seen(request),
                    fingerprint=approve_form.cleaned_data["fingerprint"],
                    acting_user=request.user,
                    second_factor=evidence(approve_form.device, password=True),
                )
            except Refused as exc:
                refused = exc
            except PermissionDenied as exc:
                refused = Refused(str(exc) or "You may not approve these proposals.")
                status = 403
            else:
                messages.success(request, "Batch approved: posting the credits has started.")
                return redirect("outage_posting", pk=pk)
    data = batches.review(outage, only=only)
    user = request.user
    # Four eyes (PayoutProposal.why_not_decided_by): the proposals this person may not approve.
    decides = has_role(user, CAN_DECIDE)
    own = [
        (p, why)
        for p in data["approvable"]
        if (why := p.why_not_decided_by(user) if decides else p.rests_on(user))
    ]
    approve_form.initial["fingerprint"] = data["fingerprint"]
    if approve_form.is_bound:
        # Quote what is shown now: a changed batch must be reviewed (and confirmed) again.
        posted = request.POST.copy()
        posted["fingerprint"] = data["fingerprint"]
        approve_form.data = posted
    context = {
        "outage": outage,
        "only": only,
        # "Review only the picked proposals" pressed with no box ticked: said, not taken for
        # "show every proposal" without a word.
        "none_picked": only is None and "picked" in request.GET,
        **data,
        "display_rows": _review_display(data["rows"]),
        "own": own,
        "may_approve": bool(data["approvable"]) and has_role(user, CAN_DECIDE) and not own,
        "approve_form": approve_form,
        "reject_form": RejectForm(),
        # Named on the buttons and in their questions: what the click decides.
        "approvable_amount": " + ".join(
            display(cents, currency, symbol=False)
            for currency, cents in data["approvable_totals"].items()
        ),
        "refused": refused,
    }
    return render(request, "web/outage_review.html", context, status=status)


@role_required(CAN_DECIDE)
@require_POST
@money_decision
def outage_review_reject(request, pk):
    """A manager rejects the reviewed proposals (all, or the selection) with one reason."""
    outage = get_outage_for(request, pk)
    form = RejectForm(request.POST)
    ids = [int(x) for x in request.POST.getlist("proposal") if x.isdigit()]
    try:
        if not form.is_valid():
            raise Refused(
                "Give the reason for rejecting.",
                problems=[("Reason for rejecting", "required")],
            )
        rejected = batches.reject_batch(
            outage, proposal_ids=ids, reason=form.cleaned_data["reason"], acting_user=request.user
        )
    except PermissionDenied as exc:
        messages.error(request, str(exc))
        return redirect(request.get_full_path().replace("/reject/", "/"))
    except Refused as exc:
        _refused_messages(request, exc)
        return redirect(request.get_full_path().replace("/reject/", "/"))
    count = len(rejected)
    messages.success(
        request,
        f"Rejected {count} proposal{pluralize(count)}: each tournament can be prepared again "
        "as a new version.",
    )
    return redirect("outage_detail", pk=pk)


_STATUS_LABELS = dict(PayoutProposal.Status.choices)


def _review_display(rows):
    """The review rows with their numbers already formatted and links built: 200 proposals x
    a dozen template filters cost more than the queries, and the page has 100 ms."""
    url = reverse("proposal_detail", args=[0]).replace("/0/", "/{}/")
    policy_url = reverse("policy_version_detail", args=[0]).replace("/0/", "/{}/")
    shown = []
    for row in rows:
        p = row["proposal"]
        shown.append(
            {
                "pk": p.pk,
                "url": url.format(p.pk),
                "version": p.version,
                "status": p.status,
                "status_label": _STATUS_LABELS.get(p.status, p.status),
                "external_id": row["tournament"].external_id,
                "name": row["tournament"].name,
                "rule": rule_label(p.rule),
                # Each tournament runs under its own policy: the version computed under.
                "policy": f"{p.policy_id} v{p.policy_version_number}",
                "policy_url": policy_url.format(p.policy_version_id),
                "entries": f"{p.lines_count:,}",
                "capped": f"{row['capped']:,}",
                "is_capped": bool(row["capped"]),
                "total": display(p.total_cents, p.currency, symbol=False),
                "warnings": p.warnings,
                "stale": row["stale"],
                "since_start": elapsed_words(
                    (p.incident.failed_at - row["tournament"].starts_at).total_seconds()
                ),
                "why_cancelled": p.incident.get_cancelled_because_display(),
                "cancel_reason": p.incident.cancel_reason,
                "prepared_by": p.prepared_by.username,
                "submitted_by": p.submitted_by.username if p.submitted_by_id else "—",
            }
        )
    return shown


# --------------------------------------------------------------------------------------------
# Posting progress and the report
# --------------------------------------------------------------------------------------------


@role_required(CAN_READ)
def outage_posting(request, pk):
    outage = get_outage_for(request, pk)
    template = "web/outage_posting.html"
    if request.htmx:
        template += "#posting"
    return render(
        request,
        template,
        {"outage": outage, "progress": outage_reports.posting_progress(outage)},
    )


@role_required(CAN_READ)
@require_POST
def outage_replay(request, pk):
    """The auditor's check in the browser: every proposal of the outage recomputed from its
    stored snapshot, each fingerprint compared (read-only; POST because it costs a full
    computation per proposal)."""
    outage = get_outage_for(request, pk)
    results = batches.replay_outage(outage)
    mismatched = [p for p, r in results if not r.matches]
    return render(
        request,
        "web/outage_replay.html",
        {"outage": outage, "results": results, "mismatched": mismatched},
        status=200,
    )


@role_required(CAN_READ)
def outage_report(request, pk):
    outage = get_outage_for(request, pk)
    return render(
        request,
        "web/outage_report.html",
        {"outage": outage, "report": outage_reports.report(outage)},
    )


REPORT_HEADER = (
    "tournament",
    "name",
    "incident_status",
    "rule",
    "currency",
    "proposal_status",
    "total",
    "entries_paid",
    "players_paid",
    "failed_at",
    "cancelled_at",
    "approved_at",
    "posted_at",
    # By form (issue 20): what the cost is paid as, and the policy's parts of it.
    "cash_paid",
    "tournament_money_credited",
    "tickets_returned",
    "tickets_value",
    "equal_shares",
    "bounty_money_returned",
    "overlay_kept_by_house",
    "approved_by",
)


def _iso(value):
    return value.isoformat() if value else ""


@role_required(CAN_READ)
def outage_report_csv(request, pk):
    outage = get_outage_for(request, pk)
    report = outage_reports.report(outage)
    # Tournament ids and names are typed by others: the one neutralising writer (downloads.py).
    writer = csv_writer()

    def rows():
        yield writer.writerow(REPORT_HEADER)
        for row in report["rows"]:
            yield writer.writerow(
                [
                    row["tournament"].external_id,
                    row["tournament"].name,
                    row["incident"].status,
                    row["rule"],
                    row["currency"],
                    row["proposal_status"],
                    format_cents(row["total_cents"]),
                    row["entries_paid"],
                    row["players_paid"],
                    _iso(outage.failed_at),
                    _iso(row["cancelled_at"]),
                    _iso(row["approved_at"]),
                    _iso(row["posted_at"]),
                    format_cents(row["cash_cents"]),
                    format_cents(row["tournament_money_cents"]),
                    row["tickets"],
                    format_cents(row["ticket_cents"]),
                    format_cents(row["equal_share_cents"]),
                    format_cents(row["bounty_refund_cents"]),
                    format_cents(row["overlay_kept_cents"]),
                    row["approved_by"],
                ]
            )

    return csv_download(rows(), f"outage-{outage.pk}.csv", stream=False)


# The XLSX kinds and widths of REPORT_HEADER's columns, in its order.
_REPORT_XLSX = (
    (TEXT, 16), (TEXT, 28), (TEXT, 13), (TEXT, 14), (TEXT, 9), (TEXT, 14), (MONEY, 14),
    (INTEGER, 12), (INTEGER, 12), (TIMESTAMP, 23), (TIMESTAMP, 23), (TIMESTAMP, 23),
    (TIMESTAMP, 23), (MONEY, 14), (MONEY, 16), (INTEGER, 12), (MONEY, 14), (MONEY, 14),
    (MONEY, 16), (MONEY, 16), (TEXT, 16),
)  # fmt: skip


@role_required(CAN_READ)
def outage_report_xlsx(request, pk):
    """The CSV's report as a spreadsheet: amounts as numbers, times as UTC date-times."""
    outage = get_outage_for(request, pk)
    report = outage_reports.report(outage)
    columns = [(n, kind, w) for n, (kind, w) in zip(REPORT_HEADER, _REPORT_XLSX, strict=True)]

    def rows():
        for row in report["rows"]:
            yield (
                row["tournament"].external_id,
                row["tournament"].name,
                row["incident"].status,
                row["rule"],
                row["currency"],
                row["proposal_status"],
                row["total_cents"],
                row["entries_paid"],
                row["players_paid"],
                outage.failed_at,
                row["cancelled_at"],
                row["approved_at"],
                row["posted_at"],
                row["cash_cents"],
                row["tournament_money_cents"],
                row["tickets"],
                row["ticket_cents"],
                row["equal_share_cents"],
                row["bounty_refund_cents"],
                row["overlay_kept_cents"],
                row["approved_by"],
            )

    return xlsx_download(f"outage-{outage.pk}.xlsx", "outage report", columns, rows())
