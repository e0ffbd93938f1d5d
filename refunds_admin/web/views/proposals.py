import json
from html import escape
from urllib.parse import quote, urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from refunds_admin.accounts import mfa
from refunds_admin.accounts.mfa import money_decision
from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, CAN_READ, has_role
from refunds_admin.errors import Refused
from refunds_admin.ledger import posting as ledger_posting
from refunds_admin.ledger import selectors as ledger_selectors
from refunds_admin.payouts.money import display, format_cents, to_cents
from refunds_admin.proposals import services as proposal_services
from refunds_admin.proposals.lines import entry_line
from refunds_admin.proposals.models import PayoutLine, PayoutProposal
from refunds_admin.tournaments.models import Entry

from .. import palette, queries
from ..access import get_proposal_for, get_proposal_rows_for, role_required
from ..downloads import (
    BOOLEAN,
    INTEGER,
    MONEY,
    TEXT,
    attachment,
    csv_download,
    csv_writer,
    xlsx_download,
)
from ..forms import ApproveForm, LineFilterForm, RejectForm
from ..progress import progress_of

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
        queries.proposal_lines(
            proposal, q=data.get("q", ""), show=data.get("show", "")
        ).values_list(*_LINE_FIELDS, named=True),
        field=field,
        descending=descending,
        after=params.get("after"),
        before=params.get("before"),
        last=params.get("last") == "1",
    )
    # The filter as query-string parameters, for the pager links.
    keep = urlencode({k: params[k] for k in ("q", "show", "sort") if params.get(k)})
    filtered = bool(data.get("q") or data.get("show") not in ("", "paid"))
    columns = queries.breakdown_columns(proposal)
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
        "rows": _display_rows(page.rows, proposal, columns),
        "headers": _headers(columns),
        "keep": keep,
        "filtered": filtered,
    }


# The breakdown's amount columns: (label, PayoutLine field, shown when), in the policy's order.
_AMOUNT_COLUMNS = (
    ("Buy-in refund", "buy_in_refund_cents", None),
    ("Next prize", "next_prize_cents", None),
    ("Equal share", "equal_share_cents", "equal_share"),
    ("Chip equity", "chip_equity_cents", None),
    ("Fee refund", "fee_refund_cents", None),
    ("Bounty refund", "bounty_refund_cents", "knockout"),
)
# What the breakdown reads of a line: plain rows, not model instances (a third of the cost of
# reading a page of 100).
_LINE_FIELDS = (
    "position", "entry_id", "player_id", "status", "chips", "capped",
    *(field for _, field, _ in _AMOUNT_COLUMNS), "total_cents", "refunds",
)  # fmt: skip
# The entry's own columns for formats that use them: (label, shown when).
_ENTRY_COLUMNS = (
    ("Bounty paid", "knockout"),
    ("Bounty on head", "knockout"),
    ("Bounties won", "knockout"),
    ("Rebuys + fees", "rebuys"),
    ("Paid with", "paid_with"),
)


def _headers(columns):
    entry = list(
        zip(
            _entry_cell_classes(columns),
            [label for label, when in _ENTRY_COLUMNS if columns[when]],
            strict=True,
        )
    )
    amounts = [label for label, _, when in _AMOUNT_COLUMNS if when is None or columns[when]]
    # Entry, player, screen name, status, chips, total, statement; and the optional ones.
    span = 7 + len(entry) + len(amounts) + columns["paid_with"]
    return {"entry": entry, "amounts": amounts, "refunds": columns["paid_with"], "span": span}


def _entry_cells(entry, columns, currency):
    """The entry's own cells of the formats the tournament uses (bounties, rebuys, paid with)."""
    cells = []
    if entry is None:
        return [""] * sum(1 for _, when in _ENTRY_COLUMNS if columns[when])
    if columns["knockout"]:
        won = entry.bounties_won_cents
        cells += [
            display(entry.bounty_paid_cents, currency, symbol=False),
            display(entry.bounty_cents, currency, symbol=False) if entry.bounty_cents else "",
            "" if won is None else display(won, currency, symbol=False),
        ]
    if columns["rebuys"]:
        rebuys = entry.rebuys_paid_cents
        # The cell may take two lines, "USD 30.00" and "+ USD 3.00", never breaking an amount.
        cells.append(
            f"{_unbroken(display(rebuys, currency, symbol=False))} +\u00a0"
            f"{_unbroken(display(entry.rebuy_fees_paid_cents, currency, symbol=False))}"
            if rebuys or entry.rebuy_fees_paid_cents
            else ""
        )
    if columns["paid_with"]:
        cells.append(queries.payments_text(entry.paid_with, currency) or queries.ALL_IN_CASH)
    return cells


def _unbroken(amount):
    """An amount ("USD 1,030.00") with a no-break space after its currency code."""
    return amount.replace(" ", "\u00a0")


# The entry columns' classes: amounts right-aligned, the payments (words) left-aligned, as the
# headers are; the rebuys' two amounts (bought + fees) may take two lines (app.css).
_ENTRY_CELL_CLASS = {"paid_with": "payments", "rebuys": "num rebuys"}


def _entry_cell_classes(columns):
    """Each shown entry column's class (_ENTRY_CELL_CLASS, "num" for the other amounts)."""
    return [_ENTRY_CELL_CLASS.get(when, "num") for _, when in _ENTRY_COLUMNS if columns[when]]


def _display_rows(lines, proposal, columns):
    """The breakdown rows as the template prints them: the entry, player and screen name as
    they came in the snapshot (the template escapes them), and every other cell of the row --
    status, chips, the formats' own columns, the amounts, total, refunds, the statement link --
    as one piece of HTML built here:

        <td>active <span class="badge">capped</span></td><td class="num">1,234</td>
        <td class="num">815.33</td>... <td class="num"><strong>815.33</strong></td>
        <td class="payments">cash</td><td><a href="..." class="statement-link">Statement</a></td>

    A page is 100 rows of 12 cells or more: through the template engine, a variable per cell
    (its lookup, localisation and Django's escape, which first checks each argument for a lazy
    string) cost more than the rest of the page (docs/performance.md, issue 25), and
    format_html per row more again. So the cells are written with the standard library's
    escape, each value escaped. The screen names, and the format columns the tournament uses,
    come from its entries at the same positions (one query for the page)."""
    currency = proposal.currency
    url = reverse("proposal_statement", args=[proposal.pk, "ENTRY"]).replace("ENTRY/", "")
    fields = [f for _, f, when in _AMOUNT_COLUMNS if when is None or columns[when]]
    wants_entries = columns["knockout"] or columns["rebuys"] or columns["paid_with"]
    entries = queries.entries_at(proposal.snapshot_id, (line.position for line in lines))
    classes = _entry_cell_classes(columns)
    rows = []
    for line in lines:
        entry = entries.get(line.position)
        cells = [
            *zip(
                classes,
                _entry_cells(entry, columns, currency) if wants_entries else (),
                strict=True,
            ),
            *(("num", display(getattr(line, f), currency, symbol=False)) for f in fields),
        ]
        statement = escape(f"{url}{quote(line.entry_id, safe='')}/")
        html = [
            f"<td>{escape(line.status)}",
            ' <span class="badge">capped</span></td>' if line.capped else "</td>",
            f'<td class="num">{line.chips:,}</td>',
            *(f'<td class="{c}">{escape(text)}</td>' for c, text in cells),
            f'<td class="num"><strong>{display(line.total_cents, currency, symbol=False)}'
            "</strong></td>",
        ]
        if columns["paid_with"]:
            refunds = queries.payments_text(line.refunds, currency) or queries.ALL_IN_CASH
            html.append(f'<td class="payments">{escape(refunds)}</td>')
        html.append(
            f'<td><a href="{statement}" hx-get="{statement}" hx-target="closest tr" '
            'hx-swap="afterend" class="statement-link">Statement</a></td>'
        )
        rows.append(
            {
                "entry_id": line.entry_id,
                "player_id": line.player_id,
                "screen_name": entry.screen_name if entry else "",
                "capped": line.capped,
                "cells": mark_safe("".join(html)),  # noqa: S308 (each value escaped above)
            }
        )
    return rows


def _may_approve(user, proposal):
    """Four eyes (PayoutProposal.may_be_decided_by). The service checks again."""
    return proposal.may_be_decided_by(user)


def _may_reject(user, proposal):
    """Any manager but the preparer and submitter (PayoutProposal.may_be_rejected_by)."""
    return proposal.may_be_rejected_by(user)


def _may_withdraw(user, proposal):
    return proposal.may_be_withdrawn_by(user)


def _decision_context(proposal):
    """Everything the approver needs beside the total (the approval page and the proposal page
    show the same): the incident and its rule, warnings, the money, and what changed."""
    incident = proposal.incident
    figures = queries.proposal_figures(proposal)
    if "prizes_awarded" not in figures:  # figures stored before they named it
        figures["prizes_awarded"] = to_cents(proposal.summary.get("prizes_awarded") or "0")
    at_recording = queries.snapshot_at_recording(incident)
    reimported = at_recording is not None and at_recording.pk != proposal.snapshot_id
    columns = queries.breakdown_columns(proposal)
    return {
        "figures": figures,
        "columns": columns,
        "knockout": columns["knockout"],
        "reconciliation_rows": queries.pool_reconciliation(
            figures, rule=proposal.rule, knockout=columns["knockout"]
        ),
        "version_changes": figures.get("changes"),
        "attempts": list(incident.restart_attempts.select_related("recorded_by")),
        "snapshot_reimported": reimported,
        "snapshot_at_recording": at_recording,
        # A package or a ticket in the prize table is counted at its stated cash value: the
        # approver is told, place by place (full refund pays no prize, so there is nothing to say).
        "non_cash_prizes": (
            [r for r in queries.prize_ranges(proposal.snapshot) if r.non_cash]
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
    template = "web/proposal_detail.html"
    if request.htmx and request.htmx.target == "lines":
        # Only the breakdown's rows: none of the page's other figures.
        proposal = get_proposal_rows_for(request, pk)
        return render(
            request,
            template + "#lines",
            {"proposal": proposal, **_lines_context(request, proposal)},
        )
    proposal = get_proposal_for(request, pk)
    progress = progress_of(proposal) if proposal.status in POSTING_STATES else None
    out_of_date = proposal_services.out_of_date_reasons(proposal)
    context = {
        "proposal": proposal,
        "incident": proposal.incident,
        "tournament": proposal.incident.tournament,
        "summary": proposal.summary or {},
        "out_of_date": out_of_date,
        # An out-of-date proposal would be refused: it is prepared again, not submitted.
        "may_submit": proposal.status == Status.DRAFT
        and has_role(request.user, CAN_PREPARE)
        and not out_of_date,
        "may_approve": _may_approve(request.user, proposal) and not out_of_date,
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
    line = get_object_or_404(entry_line(proposal, entry_id))
    try:
        text = proposal_services.statement(proposal, entry_id)
    except Refused as exc:
        text = f"No statement: {exc.message}"
    credits = ledger_selectors.entry_credits(proposal, entry_id)
    template = "web/proposal_statement.html"
    if request.htmx:
        # Opened where the person clicked: a row right under the entry's row.
        template += "#statement_row"
    span = _headers(queries.breakdown_columns(proposal))["span"]  # the breakdown's width
    return render(
        request,
        template,
        {
            "proposal": proposal,
            "line": line,
            "text": text,
            "credits": credits,
            "span": span,
            "printed_at": timezone.now(),
        },
    )


@role_required(CAN_READ)
def proposal_chart(request, pk):
    """Payout against chip stack, server-rendered SVG, at most ~500 sampled points, in the
    colours of the scheme asked for (`?scheme=dark`; the page offers both in a <picture>)."""
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
            "colour": palette.colours(palette.scheme_of(request)),
        },
        content_type="image/svg+xml",
    )
    return body


# The file formats name amounts without the unit: "total", not "total_cents"; the CSV says
# the currency on every row, so that a file read on its own is never ambiguous. The columns
# of the formats a tournament does not use are left out (breakdown_columns).
_BASE_FIELDS = (
    "entry_id", "player_id", "screen_name", "status", "chips", "buy_in_refund_cents",
    "next_prize_cents", "chip_equity_cents", "fee_refund_cents", "total_cents", "capped",
)  # fmt: skip
EXPORT_HEADER = ("currency", *(f.removesuffix("_cents") for f in _BASE_FIELDS))
_MONEY = {"buy_in_refund", "next_prize", "chip_equity", "fee_refund", "total", "equal_share",
          "bounty_refund", "bounty_paid", "bounty", "bounties_won", "rebuys_paid",
          "rebuy_fees_paid"}  # fmt: skip
# (export name, where it comes from: the line or the entry at its position, shown when)
_OPTIONAL_FIELDS = (
    ("equal_share", "line", "equal_share_cents", "equal_share"),
    ("bounty_refund", "line", "bounty_refund_cents", "knockout"),
    ("bounty_paid", "entry", "bounty_paid_cents", "knockout"),
    ("bounty", "entry", "bounty_cents", "knockout"),
    ("bounties_won", "entry", "bounties_won_cents", "knockout"),
    ("rebuys_paid", "entry", "rebuys_paid_cents", "rebuys"),
    ("rebuy_fees_paid", "entry", "rebuy_fees_paid_cents", "rebuys"),
    ("paid_with", "entry", "paid_with", "paid_with"),
    ("refunds", "line", "refunds", "paid_with"),
)


def export_fields(proposal, always=()):
    """The export's field names (after "currency") and, in the same order, their sources;
    `always`: optional fields written even where the tournament does not use them."""
    columns = queries.breakdown_columns(proposal)
    optional = [f for f in _OPTIONAL_FIELDS if f[0] in always or columns[f[3]]]
    names = [*EXPORT_HEADER[1:], *(name for name, *_ in optional)]
    return names, optional


def _export_rows(proposal, optional):
    """The lines in position order as tuples: the base fields, then the optional ones.

    A proposal's lines are its snapshot's entries, position for position: the screen name (the
    entry's: PayoutLine) and the entries' optional fields are read beside the lines, both in
    position order, side by side."""
    line_base = [f for f in _BASE_FIELDS if f != "screen_name"]
    line_fields = [*line_base, *(field for _, source, field, _ in optional if source == "line")]
    lines = (
        PayoutLine.objects.filter(proposal=proposal)
        .order_by("position")
        .values_list(*line_fields)
        .iterator(chunk_size=5000)
    )
    entry_fields = [field for _, source, field, _ in optional if source == "entry"]
    entries = (
        Entry.objects.filter(snapshot_id=proposal.snapshot_id)
        .order_by("position")
        .values_list("screen_name", *entry_fields)
        .iterator(chunk_size=5000)
    )
    order = [n for n, *_ in optional]
    by_source = [n for n, source, *_ in optional if source == "line"] + [
        n for n, source, *_ in optional if source == "entry"
    ]
    index = [by_source.index(n) for n in order]
    name_at = _BASE_FIELDS.index("screen_name")
    base = len(line_base)
    for line, entry in zip(lines, entries, strict=True):
        extra = line[base:] + entry[1:]
        yield (*line[:name_at], entry[0], *line[name_at:base], *(extra[i] for i in index))


def _file_name(proposal, ext):
    return f"proposal-{proposal.incident.tournament.external_id}-v{proposal.version}.{ext}"


def _payments_csv(payments):
    """paid_with / refunds in the entries CSV's own syntax ("ticket TKT-88121 55.00; cash 11.00"),
    or "cash" where the entry gave none or the line lists none, as the breakdown says."""
    if not payments:
        return queries.ALL_IN_CASH
    return "; ".join(
        " ".join(filter(None, (p["method"], p.get("ticket_id"), format_cents(p["amount_cents"]))))
        for p in payments
    )


def _payments_json(payments):
    """paid_with / refunds as the formats write them: amounts as strings, a ticket its id."""
    if payments is None:
        return None
    return [
        {"method": p["method"], "amount": format_cents(p["amount_cents"])}
        | ({"ticket_id": p["ticket_id"]} if p.get("ticket_id") else {})
        for p in payments
    ]


@role_required(CAN_READ)
def proposal_export_csv(request, pk):
    proposal = get_proposal_for(request, pk)
    writer = csv_writer()
    names, optional = export_fields(proposal)

    def cell(name, value):
        if name in ("paid_with", "refunds"):
            return _payments_csv(value)
        if value is None:
            return ""
        if name in _MONEY:
            return format_cents(value)
        return value

    def rows():
        yield writer.writerow(("currency", *names))
        currency = proposal.currency
        extra = names[len(_BASE_FIELDS) :]
        for row in _export_rows(proposal, optional):
            yield writer.writerow(
                [
                    currency,
                    *row[:5],
                    *(format_cents(v) for v in row[5:10]),
                    "true" if row[10] else "false",
                    *(cell(n, v) for n, v in zip(extra, row[11:], strict=True)),
                ]
            )

    return csv_download(rows(), _file_name(proposal, "csv"))


# The XLSX columns of the base fields (after "currency"): ids and names as text, chips as a
# count, the amounts by component as money, "capped" as TRUE/FALSE; widths in characters.
_XLSX_BASE = (
    (TEXT, 14), (TEXT, 14), (TEXT, 24), (TEXT, 11), (INTEGER, 13), (MONEY, 14),
    (MONEY, 13), (MONEY, 13), (MONEY, 12), (MONEY, 14), (BOOLEAN, 8),
)  # fmt: skip


@role_required(CAN_READ)
def proposal_export_xlsx(request, pk):
    """The breakdown as a spreadsheet: the CSV's columns, every entry with its amounts by
    component as numbers (a manager sums them in Excel), streamed from a temporary file."""
    proposal = get_proposal_for(request, pk)
    names, optional = export_fields(proposal)
    extra = names[len(_BASE_FIELDS) :]
    columns = [
        ("currency", TEXT, 9),
        *((n, kind, width) for n, (kind, width) in zip(names, _XLSX_BASE, strict=False)),
        *((n, MONEY if n in _MONEY else TEXT, 14 if n in _MONEY else 30) for n in extra),
    ]
    payments = {i for i, n in enumerate(extra) if n in ("paid_with", "refunds")}
    currency = proposal.currency
    base = len(_BASE_FIELDS)

    def rows():
        for row in _export_rows(proposal, optional):
            if payments:
                tail = tuple(
                    _payments_csv(v) if i in payments else v for i, v in enumerate(row[base:])
                )
                row = row[:base] + tail
            yield (currency, *row)

    return xlsx_download(_file_name(proposal, "xlsx"), "breakdown", columns, rows())


@role_required(CAN_READ)
def proposal_export_json(request, pk):
    """The payout-proposal/1 document, streamed line by line (a 100k-line proposal is ~20 MB).
    Every line has equal_share and bounty_refund, as the format says; refunds where present;
    a knockout, rebuy or payment tournament's lines also carry those fields of their entry."""
    proposal = get_proposal_for(request, pk)
    names, optional = export_fields(proposal, always=("equal_share", "bounty_refund"))
    head = {
        "format": "payout-proposal/1",
        "tournament": proposal.incident.tournament.external_id,
        "currency": proposal.currency,
        "rule": proposal.rule,
        # The policy version it was computed under, as the engine writes it: the file alone
        # tells an auditor which version priced it (policies.md, "Proposal additions").
        "policy": {
            "id": proposal.policy_id,
            "version": proposal.policy_version_number,
            "sha256": proposal.policy_sha256,
        },
        "summary": proposal.summary,
        "warnings": proposal.warnings,
        "fingerprint": proposal.fingerprint,
    }

    def chunks():
        yield json.dumps(head)[:-1] + ', "lines": ['
        for i, row in enumerate(_export_rows(proposal, optional)):
            line = dict(zip(names, row, strict=True))
            for name, value in line.items():
                if name in _MONEY and value is not None:
                    line[name] = format_cents(value)
            for name in ("paid_with", "refunds"):
                if name in line:
                    if line[name] is None:
                        del line[name]  # "refunds": only on lines returned in the form paid
                    else:
                        line[name] = _payments_json(line[name])
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
@require_http_methods(["GET", "HEAD", "POST"])
@money_decision
def proposal_approval(request, pk):
    proposal = get_proposal_for(request, pk)
    # Anything but a POST (GET, HEAD) shows the page: only a POST reaches the decision, and only
    # a POST is checked by money_decision.
    if request.method != "POST":
        return _approval_page(request, proposal)
    if not has_role(request.user, CAN_DECIDE):
        raise PermissionDenied("Only a manager may approve a proposal.")
    form = ApproveForm(request.POST, user=request.user, request=request)
    if not form.is_valid():
        return _approval_page(request, proposal, approve_form=form, status=400)
    try:
        proposal_services.approve_proposal(
            proposal,
            acting_user=request.user,
            fingerprint=form.cleaned_data["fingerprint"],
            second_factor=mfa.evidence(form.device, password=True),
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
@money_decision
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
    submitter see no decision buttons; the services refuse them anyway. Nobody sees the approve
    form of an out-of-date proposal (the reasons instead): it would be refused after the
    password and a code were spent."""
    out_of_date = proposal_services.out_of_date_reasons(proposal)
    return render(
        request,
        "web/proposal_approval.html",
        {
            "proposal": proposal,
            "incident": proposal.incident,
            "tournament": proposal.incident.tournament,
            "summary": proposal.summary or {},
            "out_of_date": out_of_date,
            "may_approve": _may_approve(request.user, proposal) and not out_of_date,
            "may_reject": _may_reject(request.user, proposal),
            "may_withdraw": _may_withdraw(request.user, proposal),
            # Why this manager may not decide (four eyes, or a sign-in set by someone else).
            "own_proposal": proposal.why_not_decided_by(request.user)
            if has_role(request.user, CAN_DECIDE)
            else proposal.rests_on(request.user),
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
    """This proposal's row of ledger.selectors.reconcile(): approved total vs credits booked."""
    return next(iter(ledger_selectors.reconcile([proposal.pk])), None)


@role_required(CAN_DECIDE)
@require_POST
def proposal_resume_posting(request, pk):
    return _press(request, pk, ledger_posting.resume_posting, "Posting resumed.")
