from django.shortcuts import render
from django.views.decorators.http import require_POST

from refunds_admin.accounts.roles import CAN_PREPARE, CAN_READ
from refunds_admin.errors import Refused
from refunds_admin.ledger import selectors as ledger_selectors
from refunds_admin.proposals import services as proposal_services

from .. import queries
from ..access import role_required
from ..forms import PlayerLookupForm
from ..paging import Column, KeysetPage

INLINE_STATEMENTS = 3
# The players found sort by id or by how many tournaments they played (their screen names and
# e-mails are lists, which do not sort); the player id is unique, so it breaks the ties.
PLAYER_COLUMNS = [
    Column("player", "Player id", ("player_id",)),
    Column("tournaments", "Tournaments", ("tournaments",), numeric=True, descending_first=True),
]


@role_required(CAN_READ)
def player_lookup(request):
    """Find a player by id, screen-name prefix or e-mail (any case), then see every tournament
    they played with its state for them (pending, approved, posted), their credits and a link
    to each entry's printable statement -- to answer "why did I get $815.33?"."""
    data = request.GET.copy()
    if "q" not in data and data.get("player_id"):
        data["q"] = data["player_id"]  # links written before the lookup took any query
    form = PlayerLookupForm(data or None)
    matches, page, amount, player, tournaments, balances, forms = (None,) * 5 + ([], None)
    if form.is_valid():
        q = form.cleaned_data["q"].strip()
        chosen = (request.GET.get("player") or "").strip()
        found = queries.player_matches(q)
        amount = queries.quoted_amount(q)
        if chosen and found.filter(player_id=chosen).exists():
            player = chosen
        else:
            page = KeysetPage(
                data,
                found,
                PLAYER_COLUMNS,
                default="player",
                noun="players",
                tiebreak="player_id",
            )
            if page.total == 1:
                player = page.rows[0]["player_id"]
            matches = queries.with_names(page.rows)
    if player is not None:
        tournaments = queries.player_tournaments(player)
        shown = 0
        for t in tournaments:
            # Approved or posted: the statement the player gets (or got), beside the table --
            # for the newest few; each costs a recomputation, the others are one click away.
            t["statements"] = []
            for line in t["lines"]:
                if t["state"] != "pending" and line.total_cents and shown < INLINE_STATEMENTS:
                    t["statements"].append((line, _statement(t["proposal"], line.entry_id)))
                    shown += 1
        balances = sorted(ledger_selectors.player_balances(player).items())
        # By form: a ticket given back is not cash, nor is tournament money.
        forms = ledger_selectors.player_refund_forms(player)
        if not forms["tickets"] and not forms["tournament_money"]:
            forms = None  # all in cash: the balance says it all
    return render(
        request,
        "web/player_lookup.html",
        {
            "form": form,
            "matches": matches,
            "page": page,
            "amount_cents": amount,
            "player": player,
            "tournaments": tournaments,
            "balances": balances,
            "forms": forms,
        },
    )


def _statement(proposal, entry_id):
    try:
        return proposal_services.statement(proposal, entry_id)
    except Refused as exc:
        return f"(no statement: {exc.message})"


@role_required(CAN_PREPARE)
@require_POST
def send_statement(request):
    """Support sends a player their statement again, or to the address the player gives."""
    from django.contrib import messages
    from django.shortcuts import get_object_or_404, redirect
    from django.urls import reverse
    from django.utils.http import urlencode

    from refunds_admin.notifications import services as notification_services
    from refunds_admin.proposals.models import PayoutProposal

    proposal = get_object_or_404(
        PayoutProposal.objects.select_related("incident__tournament"),
        pk=request.POST.get("proposal") if str(request.POST.get("proposal", "")).isdigit() else 0,
    )
    player_id = request.POST.get("player", "")
    try:
        address = notification_services.send_statement_copy(
            proposal, player_id, address=request.POST.get("address", ""), acting_user=request.user
        )
    except Refused as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Statement of {proposal.incident.tournament.external_id} sent to {address}.",
        )
    return redirect(reverse("player_lookup") + "?" + urlencode({"q": player_id}))
