from html import escape

from django.contrib import messages
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from refunds_admin.accounts.roles import CAN_DECIDE, CAN_PREPARE, CAN_READ, has_role
from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incident_services
from refunds_admin.payouts.money import display
from refunds_admin.tournaments import services as tournament_services
from refunds_admin.tournaments.models import Snapshot, Tournament

from .. import queries
from ..access import get_tournament_for, role_required
from ..forms import CsvImportForm, SnapshotUploadForm
from ..paging import Column, KeysetPage
from ..policy_forms import TournamentPolicyForm

# The columns the list sorts by. The status is worked out per row from its incidents and
# proposals, so it does not sort; a tournament without a snapshot counts 0 entries, version 0.
TOURNAMENT_COLUMNS = [
    Column("tournament", "Tournament", ("external_id",)),
    Column("started", "Started", ("starts_at",), descending_first=True),
    Column("buy_in", "Buy-in + fee", ("buy_in_cents", "fee_cents"), numeric=True),
    Column("entries", "Entries", ("entries",), numeric=True, descending_first=True),
    Column("snapshot", "Snapshot", ("snapshot_version",), descending_first=True),
]


@role_required(CAN_READ)
def tournament_list(request):
    """Every tournament, 50 a page (newest start first), searchable by id or name."""
    q = request.GET.get("q", "").strip()
    tournaments = Tournament.objects.annotate(
        entries=Coalesce("current_snapshot__entries_count", 0),
        snapshot_version=Coalesce("current_snapshot__version", 0),
    )
    if "\x00" in q:
        # PostgreSQL takes no NUL in a text parameter, and no stored id or name holds one.
        tournaments = tournaments.none()
    elif q:
        tournaments = tournaments.filter(Q(external_id__icontains=q) | Q(name__icontains=q))
    page = KeysetPage(
        request.GET,
        tournaments.select_related("current_snapshot")
        .defer("current_snapshot__document_zlib", "current_snapshot__parsed")
        .prefetch_related("incidents__proposals"),
        TOURNAMENT_COLUMNS,
        default="-started",
        noun="tournaments",
    )
    rows = [(t, _where_it_stands(t)) for t in page.rows]
    return render(request, "web/tournament_list.html", {"rows": rows, "q": q, "page": page})


def _where_it_stands(tournament):
    """The tournament's status in words, for the list: its live incident and proposal, and
    "frozen" explained."""
    incidents = sorted(tournament.incidents.all(), key=lambda i: (i.failed_at, i.pk))
    incident = incidents[-1] if incidents else None
    proposal = None
    if incident is not None:
        proposal = max(incident.proposals.all(), key=lambda p: p.version, default=None)
    if tournament.frozen_at is not None:
        approved = "a proposal was approved"
        if proposal is not None:
            approved = f"proposal v{proposal.version} was approved"
            if proposal.status != "approved":
                approved += f" (now {proposal.get_status_display().lower()})"
        words = (
            f"{approved}: the snapshot it was computed from is final, so no re-import and no "
            "new incident"
        )
        return {
            "key": "frozen",
            "label": "Frozen",
            "words": words,
            "incident": incident,
            "proposal": proposal,
        }
    if incident is None:
        return {
            "key": "none",
            "label": "No incident",
            "words": "",
            "incident": None,
            "proposal": None,
        }
    if incident.status == "open":
        overdue = timezone.now() > incident.deadline
        return {
            "key": "open",
            "label": "Incident open",
            "words": "30 minutes passed without play resuming: to be cancelled"
            if overdue
            else "waiting for play to resume or the 30 minutes to pass",
            "incident": incident,
            "proposal": None,
        }
    if incident.status == "resumed":
        return {
            "key": "resumed",
            "label": "Play resumed",
            "words": "no payout",
            "incident": incident,
            "proposal": None,
        }
    words = (
        f"proposal v{proposal.version} {proposal.get_status_display().lower()}"
        if proposal
        else "no proposal prepared yet"
    )
    return {
        "key": "cancelled",
        "label": "Cancelled",
        "words": words,
        "incident": incident,
        "proposal": proposal,
    }


@role_required(CAN_READ)
def snapshot_document(request, pk, version):
    """The stored snapshot document, byte for byte as imported (importing it again
    round-trips): support sends it on, an auditor replays it elsewhere."""
    tournament = get_tournament_for(request, pk)
    snapshot = get_object_or_404(
        Snapshot.objects.only("document_zlib", "version", "sha256"),
        tournament=tournament,
        version=version,
    )
    response = HttpResponse(snapshot.document, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="{tournament.external_id}-v{snapshot.version}.json"'
    )
    response["X-Content-SHA256"] = snapshot.sha256
    return response


@role_required(CAN_READ)
@vary_on_headers("HX-Request", "HX-Target")  # the entries partial for htmx
def tournament_detail(request, pk):
    tournament = get_tournament_for(request, pk)
    # The versions are listed, never read: their documents and parsed forms (megabytes each)
    # stay in the database, the current one's too.
    snapshots = list(
        tournament.snapshots.select_related("imported_by").defer("document_zlib", "parsed")
    )
    snapshot = next((s for s in snapshots if s.pk == tournament.current_snapshot_id), None)
    version = request.GET.get("version")
    if version and version.isdigit():
        snapshot = next((s for s in snapshots if s.version == int(version)), snapshot)
    q = request.GET.get("q", "")
    page = None
    if snapshot is not None:
        page = queries.keyset_page(
            queries.snapshot_entries(snapshot, q=q).values_list(*_ENTRY_FIELDS, named=True),
            field="position",
            descending=False,
            after=request.GET.get("after"),
            before=request.GET.get("before"),
            last=request.GET.get("last") == "1",
        )
    context = {
        "tournament": tournament,
        "snapshot": snapshot,
        "snapshots": snapshots,
        # The prize table as ranges, a page of them at a time (queries.prize_page).
        "prizes": queries.prize_page(snapshot, _place(request.GET.get("prizes_from")))
        if snapshot
        else None,
        "page": page,
        "rows": _entry_rows(page.rows, snapshot, tournament.currency) if page else [],
        "q": q,
        # The entries table's width: 7 columns, and those of the formats the snapshot uses.
        "entry_columns": 7
        + (
            3 * snapshot.uses_knockout + snapshot.uses_rebuys + snapshot.uses_paid_with
            if snapshot
            else 0
        ),
        "incidents": tournament.incidents.all(),
        # Which policy applies and why; a manager may change it until a proposal is approved.
        "policy": tournament.policy_version.engine(),
        "policy_form": TournamentPolicyForm(initial={"version": tournament.policy_version_id})
        if has_role(request.user, CAN_DECIDE) and tournament.frozen_at is None
        else None,
    }
    template = "web/tournament_detail.html"
    if request.htmx and request.htmx.target == "entries":
        template += "#entries"
    return render(request, template, context)


# What the entries table reads of an entry: plain rows, not model instances.
_ENTRY_FIELDS = (
    "position", "entry_id", "player_id", "screen_name", "status", "chips", "buy_in_paid_cents",
    "fee_paid_cents", "rebuys_paid_cents", "rebuy_fees_paid_cents", "bounty_paid_cents",
    "bounty_cents", "bounties_won_cents", "paid_with", "finish_place", "prize_awarded_cents",
)  # fmt: skip


def _entry_rows(entries, snapshot, currency):
    """The entries table's rows as the template prints them: the entry, player and screen name
    as they came in the snapshot (the template escapes them), and the other cells -- status,
    chips, what was paid, the columns of the formats the snapshot uses, the finish -- as one
    piece of HTML built here, each value escaped. Through the template engine, a variable per
    cell for 100 rows cost more than the rest of the page (issue 25; _display_rows of the
    breakdown says why not format_html)."""

    def amount(cents):
        return display(cents, currency, symbol=False)

    rows = []
    for e in entries:
        cells = [f"{amount(e.buy_in_paid_cents)} + {amount(e.fee_paid_cents)}"]
        if snapshot.uses_rebuys:
            cells.append(
                f"{amount(e.rebuys_paid_cents)} + {amount(e.rebuy_fees_paid_cents)}"
                if e.rebuys_paid_cents or e.rebuy_fees_paid_cents
                else ""
            )
        if snapshot.uses_knockout:
            cells += [
                amount(e.bounty_paid_cents),
                amount(e.bounty_cents) if e.status == "active" else "",
                "" if e.bounties_won_cents is None else amount(e.bounties_won_cents),
            ]
        html = [
            f'<td>{escape(e.status)}</td><td class="num">{e.chips:,}</td>',
            *(f'<td class="num">{escape(cell)}</td>' for cell in cells),
        ]
        if snapshot.uses_paid_with:
            html.append(
                f"<td>{escape(queries.payments_text(e.paid_with, currency) or queries.ALL_IN_CASH)}</td>"
            )
        finish = ""
        if e.finish_place:
            finish = str(e.finish_place)
            if e.prize_awarded_cents:
                finish += f" ({amount(e.prize_awarded_cents)})"
        html.append(f"<td>{escape(finish)}</td>")
        rows.append(
            {
                "entry_id": e.entry_id,
                "player_id": e.player_id,
                "screen_name": e.screen_name,
                "cells": mark_safe("".join(html)),  # noqa: S308 (each value escaped above)
            }
        )
    return rows


def _place(text):
    return int(text) if text and text.isdigit() and len(text) < 10 else None


def _in_file(row, what):
    """A problem shown next to its CSV file: "row 6 (entry e5), chips: ...", or the message
    alone when it is about the whole file ("place 2 is missing: ...")."""
    row = row.strip()
    return f"{row}: {what}" if row else what


def _attach_csv_problems(form, problems):
    """Put each problem of a refused CSV import next to what the person filled in: a typed
    tournament field ("fee"), or the CSV file whose row it names ("entries CSV row 6, chips")."""
    for where, what in problems:
        where = str(where or "")
        if where in form.fields:
            form.add_error(where, what)
        elif where.startswith("entries CSV"):
            form.add_error("entries_csv", _in_file(where.removeprefix("entries CSV"), what))
        elif where.startswith("prize table CSV"):
            form.add_error("prizes_csv", _in_file(where.removeprefix("prize table CSV"), what))
        else:
            form.add_error(None, f"{where}: {what}" if where else what)


@role_required(CAN_PREPARE)
@require_http_methods(["GET", "HEAD", "POST"])
def tournament_import(request):
    """Upload a snapshot JSON, or fill the CSV form. All or nothing: on any problem nothing is
    stored and every problem is listed next to its row or field."""
    upload_form = SnapshotUploadForm()
    csv_form = CsvImportForm()
    refused = None
    problems = []
    kind = request.POST.get("kind", "json")
    if request.method == "POST":
        try:
            if kind == "csv":
                csv_form = CsvImportForm(request.POST, request.FILES)
                if csv_form.is_valid():
                    snapshot = incident_services.import_csv(
                        csv_form.cleaned_data["entries_csv"].read(),
                        csv_form.cleaned_data["prizes_csv"].read(),
                        csv_form.tournament_fields(),
                        acting_user=request.user,
                    )
                    return _imported(request, snapshot)
                _check_the_rest(csv_form)
            else:
                upload_form = SnapshotUploadForm(request.POST, request.FILES)
                if upload_form.is_valid():
                    snapshot = incident_services.import_snapshot(
                        upload_form.cleaned_data["file"].read(),
                        acting_user=request.user,
                        source=Snapshot.Source.UPLOAD,
                    )
                    return _imported(request, snapshot)
        except Refused as exc:
            refused = exc.message
            problems = exc.problems
            if kind == "csv":
                _attach_csv_problems(csv_form, problems)
                problems = []
    if request.method == "POST" and refused is None:
        # Refused by the form itself (a field missing or too long): the same summary at the
        # top as a refused import, each problem named by its field's label.
        form = csv_form if kind == "csv" else upload_form
        refused = (
            "The CSV import was refused; nothing was imported."
            if kind == "csv"
            else "The snapshot was refused; nothing was imported."
        )
        problems = _form_problems(form)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "web/tournament_import.html",
        {
            "upload_form": upload_form,
            "csv_form": csv_form,
            "refused": refused,
            "problems": problems,
            "kind": kind,
            # A browser cannot put a file back in its picker: name what was chosen.
            "chosen_files": {name: f.name for name, f in request.FILES.items()},
        },
        status=status,
    )


def _check_the_rest(csv_form):
    """The form refused a typed field: the files and the other fields are checked all the same
    (the document is built and validated, nothing is stored), so that every problem is listed in
    one round rather than the next one appearing only after this one is fixed. What the form
    already said about a field is not said again ("is required")."""
    data = csv_form.cleaned_data
    if "entries_csv" not in data or "prizes_csv" not in data:
        return  # a file missing or too large: the form says so, and there is nothing to check
    problems = tournament_services.csv_problems(
        data["entries_csv"].read(), data["prizes_csv"].read(), csv_form.tournament_fields()
    )
    _attach_csv_problems(csv_form, [(w, m) for w, m in problems if w not in csv_form.errors])


def _form_problems(form):
    """(field label, message) for every error of a form refused before the import."""
    return [
        (str(form.fields[name].label) if name in form.fields else "form", message)
        for name, errors in form.errors.items()
        for message in errors
    ]


def _imported(request, snapshot):
    if snapshot.already_current:
        messages.info(
            request,
            f"Already imported: the file is identical to {snapshot.tournament.external_id}'s "
            f"snapshot version {snapshot.version}; nothing changed.",
        )
        return redirect("tournament_detail", pk=snapshot.tournament_id)
    messages.success(
        request,
        f"Imported {snapshot.tournament.external_id} (snapshot version {snapshot.version}, "
        f"{snapshot.entries_count:,} entries).",
    )
    return redirect("tournament_detail", pk=snapshot.tournament_id)
