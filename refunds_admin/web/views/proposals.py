import json
from urllib.parse import quote, urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from refunds_admin.accounts import mfa
from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, CAN_READ, has_role
from refunds_admin.errors import Refused
from refunds_admin.ledger import services as ledger_services
from refunds_admin.payouts.money import display, format_cents
from refunds_admin.proposals import services as proposal_services
from refunds_admin.proposals.models import PayoutLine, PayoutProposal

from .. import queries
from ..access import device_required, get_proposal_for, role_required
from ..downloads import attachment, csv_writer
from ..forms import ApproveForm, LineFilterForm, RejectForm
from ..posting import progress_of
from .tournaments import prize_ranges

Status = PayoutProposal.Status
POSTING_STATES = (Status.APPROVED, Status.POSTING, Status.POSTED, Status.FAILED)


# The breakdown opens on the entries being paid, largest first: most entries of a big field
# get nothing, and a first screen of USD 0.00 rows answers no one. "All entries" (show=) is
# one click away.
OPENING_VIEW = {"show": "paid", "sort": "total"}


def _lines_context(request, proposal):
    params = request.GET.copy()
    if "show" not in params and not any(
        params.get(k) for k in ("q", "sort", "after", "before", "last")
    ):
        params.update(OPENING_VIEW)
    form = LineFilterForm(params)
    form.is_valid()
    data = form.cleaned_data
    sort = data.get("sort") or "position"
    field, descending = queries.LINE_SORTS[sort]
    page = queries.keyset_page(
        queries.proposal_lines(proposal, q=data.get("q", ""), show=data.get("show", "")),
        field=field,
        descending=descending,
        after=params.get("after"),
        before=params.get("before"),
        last=params.get("last") == "1",
    )
    # The filter as query-string parameters, for the pager links.
    keep = urlencode({k: params[k] for k in ("q", "show", "sort") if params.get(k)})
    filtered = bool(data.get("q") or data.get("show") not in ("", "paid"))
    # Column headers sort; a second click on the sorted column reverses it.
    sort_links, sort_aria = {}, {}
    for column in ("position", "chips", "total"):
        target = f"-{column}" if sort == column else column
        sort_links[column] = urlencode(
            {k: params[k] for k in ("q", "show") if params.get(k)} | {"sort": target}
        )
        if sort.lstrip("-") == column:
            sort_aria[column] = "descending" if descending else "ascending"
        else:
            sort_aria[column] = "none"
    return {
        "sort_links": sort_links,
        "sort_aria": sort_aria,
        "filter_form": form,
        "page": page,
        "rows": _display_rows(page.rows, proposal),
        "keep": keep,
        "filtered": filtered,
    }


def _display_rows(lines, proposal):
    """The breakdown rows with their amounts already formatted ("USD 815.33") and their
    statement link built: 100 rows x 5 amounts through template filters cost more than the
    database query, and the 50 ms budget is for the whole page."""
    currency = proposal.currency
    url = reverse("proposal_statement", args=[proposal.pk, "ENTRY"]).replace("ENTRY/", "")
    return [
        {
            "line": line,
            "chips": f"{line.chips:,}",
            "amounts": [
                display(cents, currency, symbol=False)
                for cents in (
                    line.buy_in_refund_cents,
                    line.next_prize_cents,
                    line.chip_equity_cents,
                    line.fee_refund_cents,
                )
            ],
            "total": display(line.total_cents, currency, symbol=False),
            "statement_url": f"{url}{quote(line.entry_id, safe='')}/",
        }
        for line in lines
    ]


def _may_approve(user, proposal):
    """Four eyes: a manager who neither prepared nor submitted it. The service checks again."""
    return (
        proposal.status == Status.SUBMITTED
        and has_role(user, CAN_DECIDE)
        and user.pk not in (proposal.prepared_by_id, proposal.submitted_by_id)
    )


# Rejecting is a decision too: the same four eyes.
_may_reject = _may_approve


def _may_withdraw(user, proposal):
    return proposal.status == Status.SUBMITTED and user.pk == proposal.submitted_by_id


def _decision_context(proposal):
    """Everything the approver needs beside the total (the approval page and the proposal page
    show the same): the incident and its rule, warnings, the money, and what changed."""
    incident = proposal.incident
    figures = queries.proposal_figures(proposal)
    at_recording = queries.snapshot_at_recording(incident)
    reimported = at_recording is not None and at_recording.pk != proposal.snapshot_id
    return {
        "figures": figures,
        "reconciliation_rows": queries.pool_reconciliation(figures),
        "version_changes": figures.get("changes"),
        "attempts": list(incident.restart_attempts.select_related("recorded_by")),
        "snapshot_reimported": reimported,
        "snapshot_at_recording": at_recording,
        # A package or a ticket in the prize table is counted at its stated cash value: the
        # approver is told, place by place (full refund pays no prize, so there is nothing to say).
        "non_cash_prizes": (
            [r for r in prize_ranges(proposal.snapshot) if r["non_cash"]]
            if proposal.rule != "full_refund"
            else []
        ),
        "snapshot_changes": (
            queries.snapshot_changes(at_recording, proposal.snapshot, with_entries=False)
            if reimported
            else None
        ),
    }


@role_required(CAN_READ)
@vary_on_headers("HX-Request", "HX-Target")  # the lines partial for htmx
def proposal_detail(request, pk):
    proposal = get_proposal_for(request, pk)
    template = "web/proposal_detail.html"
    if request.htmx and request.htmx.target == "lines":
        # Only the breakdown's rows: none of the page's other figures.
        return render(
            request,
            template + "#lines",
            {"proposal": proposal, **_lines_context(request, proposal)},
        )
    progress = progress_of(proposal) if proposal.status in POSTING_STATES else None
    context = {
        "proposal": proposal,
        "incident": proposal.incident,
        "tournament": proposal.incident.tournament,
        "summary": proposal.summary or {},
        "may_submit": proposal.status == Status.DRAFT and has_role(request.user, CAN_PREPARE),
        "may_approve": _may_approve(request.user, proposal),
        "may_reject": _may_reject(request.user, proposal),
        "may_withdraw": _may_withdraw(request.user, proposal),
        "shows_posting": proposal.status in POSTING_STATES,
        "progress": progress,
        "reconciliation": _reconciliation_for(proposal) if progress and progress["done"] else None,
        "may_resume": progress is not None
        and progress.get("state") == "failed"
        and has_role(request.user, CAN_DECIDE),
        **_decision_context(proposal),
        **_lines_context(request, proposal),
    }
    return render(request, template, context)


@role_required(CAN_READ)
@vary_on_headers("HX-Request")  # the statement partial for htmx
def proposal_statement(request, pk, entry_id):
    """The player's statement in the policy's layout (the same text as compute_payouts --explain)."""
    proposal = get_proposal_for(request, pk)
    line = get_object_or_404(PayoutLine, proposal=proposal, entry_id=entry_id)
    try:
        text = proposal_services.statement(proposal, entry_id)
    except Refused as exc:
        text = f"No statement: {exc.message}"
    credits = queries.entry_credits(proposal, entry_id)
    template = "web/proposal_statement.html"
    if request.htmx:
        # Opened where the person clicked: a row right under the entry's row.
        template += "#statement_row"
    return render(
        request, template, {"proposal": proposal, "line": line, "text": text, "credits": credits}
    )


@role_required(CAN_READ)
def proposal_chart(request, pk):
    """Payout against chip stack, server-rendered SVG, at most ~500 sampled points."""
    proposal = get_proposal_for(request, pk)
    points = queries.chart_points(proposal)
    # Left margin wide enough for the largest amount's label ("$1,234,567.89" at 11px), so
    # that no label is clipped at the edge.
    width, height, left, bottom = 720, 320, 96, 56
    max_chips = max((c for c, _, _ in points), default=1) or 1
    max_total = max((t for _, t, _ in points), default=1) or 1
    dots = [
        {
            "x": round(left + (width - left - 12) * c / max_chips, 1),
            "y": round(height - bottom + 10 - (height - bottom - 14) * t / max_total, 1),
            "capped": k,
        }
        for c, t, k in points
    ]
    body = render(
        request,
        "web/proposal_chart.svg",
        {
            "proposal": proposal,
            "dots": dots,
            "count": len(points),
            "max_chips": max_chips,
            "max_total": max_total,
            "w": width,
            "h": height,
            "pad": left,
            "axis_y": height - bottom + 10,
        },
        content_type="image/svg+xml",
    )
    return body


# The file formats name amounts without the unit: "total", not "total_cents"; the CSV says
# the currency on every row, so that a file read on its own is never ambiguous.
EXPORT_HEADER = (
    "currency",
    *(f.removesuffix("_cents") for f in proposal_services.LINE_FIELDS),
)


def _export_rows(proposal):
    return (
        PayoutLine.objects.filter(proposal=proposal)
        .order_by("position")
        .values_list(*proposal_services.LINE_FIELDS)
        .iterator(chunk_size=5000)
    )


def _file_name(proposal, ext):
    return f"proposal-{proposal.incident.tournament.external_id}-v{proposal.version}.{ext}"


@role_required(CAN_READ)
def proposal_export_csv(request, pk):
    proposal = get_proposal_for(request, pk)
    writer = csv_writer()

    def rows():
        yield writer.writerow(EXPORT_HEADER)
        currency = proposal.currency
        for row in _export_rows(proposal):
            yield writer.writerow(
                [
                    currency,
                    *row[:5],
                    *(format_cents(v) for v in row[5:10]),
                    "true" if row[10] else "false",
                ]
            )

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = attachment(_file_name(proposal, "csv"))
    return response


@role_required(CAN_READ)
def proposal_export_json(request, pk):
    """The payout-proposal/1 document, streamed line by line (a 100k-line proposal is ~20 MB)."""
    proposal = get_proposal_for(request, pk)
    head = {
        "format": "payout-proposal/1",
        "tournament": proposal.incident.tournament.external_id,
        "currency": proposal.currency,
        "rule": proposal.rule,
        "summary": proposal.summary,
        "warnings": proposal.warnings,
        "fingerprint": proposal.fingerprint,
    }

    def chunks():
        yield json.dumps(head)[:-1] + ', "lines": ['
        for i, row in enumerate(_export_rows(proposal)):
            line = dict(zip(EXPORT_HEADER[1:], row, strict=True))
            for name in ("buy_in_refund", "next_prize", "chip_equity", "fee_refund", "total"):
                line[name] = format_cents(line[name])
            yield ("," if i else "") + json.dumps(line)
        yield "]}\n"

    response = StreamingHttpResponse(chunks(), content_type="application/json")
    response["Content-Disposition"] = attachment(_file_name(proposal, "json"))
    return response


def _press(request, pk, service, done):
    """A button without a form: call the service, say what happened, back to the proposal."""
    proposal = get_proposal_for(request, pk)
    try:
        service(proposal, acting_user=request.user)
    except Refused as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, done)
    return redirect("proposal_detail", pk=pk)


@role_required(CAN_PREPARE)
@require_POST
def proposal_submit(request, pk):
    return _press(
        request,
        pk,
        proposal_services.submit_proposal,
        "Proposal submitted for a manager's approval.",
    )


@role_required(CAN_READ)
@require_http_methods(["GET", "POST"])
@device_required
def proposal_approval(request, pk):
    proposal = get_proposal_for(request, pk)
    if request.method == "GET":
        return _approval_page(request, proposal)
    if not has_role(request.user, CAN_DECIDE):
        raise PermissionDenied("Only a manager may approve a proposal.")
    form = ApproveForm(request.POST, user=request.user, request=request)
    if not form.is_valid():
        return _approval_page(request, proposal, approve_form=form, status=400)
    try:
        proposal_services.approve_proposal(
            proposal, acting_user=request.user, fingerprint=form.cleaned_data["fingerprint"]
        )
    except Refused as exc:
        return _approval_page(request, proposal, approve_form=form, refused=exc.message, status=400)
    except PermissionDenied as exc:
        # Four eyes: the service refuses the preparer or submitter even if a form was forged;
        # say so next to the form, with the status of a refusal.
        refused = str(exc) or "You may not approve this proposal."
        return _approval_page(request, proposal, approve_form=form, refused=refused, status=403)
    messages.success(request, "Proposal approved: posting the credits has started.")
    return redirect("proposal_detail", pk=pk)


@role_required(CAN_DECIDE)
@require_POST
@device_required
def proposal_reject(request, pk):
    proposal = get_proposal_for(request, pk)
    form = RejectForm(request.POST)
    if form.is_valid():
        try:
            proposal_services.reject_proposal(
                proposal, acting_user=request.user, reason=form.cleaned_data["reason"]
            )
        except Refused as exc:
            form.add_error(None, exc.message)
        except PermissionDenied as exc:
            return _approval_page(request, proposal, reject_form=form, refused=str(exc), status=403)
        else:
            messages.success(
                request, "Proposal rejected. It can be prepared again as a new version."
            )
            return redirect("proposal_detail", pk=pk)
    return _approval_page(request, proposal, reject_form=form, status=400)


@role_required(CAN_PREPARE)
@require_POST
def proposal_withdraw(request, pk):
    """The submitter takes the submission back: the proposal returns to draft."""
    proposal = get_proposal_for(request, pk)
    try:
        proposal_services.withdraw_proposal(
            proposal, acting_user=request.user, reason=request.POST.get("reason", "")
        )
    except (Refused, PermissionDenied) as exc:
        messages.error(request, getattr(exc, "message", None) or str(exc))
    else:
        messages.success(request, "Submission withdrawn: the proposal is a draft again.")
    return redirect("proposal_detail", pk=pk)


def _approval_page(
    request, proposal, *, approve_form=None, reject_form=None, refused=None, status=200
):
    """The approval page: what is being approved and why (the incident, the rule, warnings,
    the money, what changed), the password again to approve, a reason to reject. Preparer and
    submitter see no decision buttons; the services refuse them anyway."""
    return render(
        request,
        "web/proposal_approval.html",
        {
            "proposal": proposal,
            "incident": proposal.incident,
            "tournament": proposal.incident.tournament,
            "summary": proposal.summary or {},
            "may_approve": _may_approve(request.user, proposal),
            "may_reject": _may_reject(request.user, proposal),
            "may_withdraw": _may_withdraw(request.user, proposal),
            "own_proposal": request.user.pk in (proposal.prepared_by_id, proposal.submitted_by_id),
            "approve_form": approve_form
            or ApproveForm(
                initial={"fingerprint": proposal.fingerprint}, user=request.user, request=request
            ),
            "reject_form": reject_form or RejectForm(),
            "refused": refused,
            "has_device": mfa.confirmed_device(request.user) is not None,
            **_decision_context(proposal),
        },
        status=status,
    )


@role_required(CAN_READ)
@require_POST
@vary_on_headers("HX-Request")  # the replay partial for htmx
def proposal_replay(request, pk):
    """Recompute from the stored snapshot and compare fingerprints (the auditor's check).
    Read-only, but POST because it is an action that costs a full computation."""
    proposal = get_proposal_for(request, pk)
    result = proposal_services.replay_proposal(proposal)
    template = "web/proposal_replay.html"
    if request.htmx:
        # From a row of the audit history: the result opens under that row, in view.
        template += "#replay_row" if request.GET.get("beside") == "row" else "#replay"
    return render(request, template, {"proposal": proposal, "result": result})


@role_required(CAN_READ)
@vary_on_headers("HX-Request")  # the progress partial for htmx
def proposal_posting(request, pk):
    """The posting progress bar; htmx polls this partial until the job is posted or failed."""
    proposal = get_proposal_for(request, pk)
    progress = progress_of(proposal)
    reconciliation = _reconciliation_for(proposal) if progress["done"] else None
    template = "web/proposal_detail.html#posting" if request.htmx else "web/proposal_posting.html"
    return render(
        request,
        template,
        {
            "proposal": proposal,
            "progress": progress,
            "reconciliation": reconciliation,
            "may_resume": progress.get("state") == "failed" and has_role(request.user, CAN_DECIDE),
        },
    )


def _reconciliation_for(proposal):
    """This proposal's row of ledger.services.reconcile(): approved total vs credits booked."""
    return next(iter(ledger_services.reconcile([proposal.pk])), None)


@role_required(CAN_DECIDE)
@require_POST
def proposal_resume_posting(request, pk):
    return _press(request, pk, ledger_services.resume_posting, "Posting resumed.")
