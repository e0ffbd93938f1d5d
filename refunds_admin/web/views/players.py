from typing import Any

from django.shortcuts import render

from refunds_admin.accounts.roles import CAN_READ
from refunds_admin.errors import Refused
from refunds_admin.ledger import services as ledger_services
from refunds_admin.proposals import services as proposal_services

from ..access import role_required
from ..forms import PlayerLookupForm


@role_required(CAN_READ)
def player_lookup(request):
    """Every credit a player received, with the statement behind each (to answer "why did I get
    $815.33?"). Credits are booked per component (buy-in refund, next prize, chip equity, fee);
    the page groups them per entry, the unit the statement explains."""
    form = PlayerLookupForm(request.GET or None)
    entries, balances = None, {}
    if form.is_valid():
        found = ledger_services.player_credits(form.cleaned_data["player_id"].strip())
        balances = found["balances"]
        entries = _by_entry(found["credits"])
    return render(
        request,
        "web/player_lookup.html",
        {"form": form, "entries": entries, "balances": sorted(balances.items())},
    )


def _by_entry(credits):
    groups: dict[tuple[int, str], dict[str, Any]] = {}
    for credit in credits:
        group = groups.setdefault(
            (credit.proposal_id, credit.entry_id),
            {
                "proposal": credit.proposal,
                "tournament": credit.proposal.incident.tournament,
                "entry_id": credit.entry_id,
                "currency": credit.currency,
                "components": [],
                "total_cents": 0,
                "credited_at": credit.created_at,
            },
        )
        group["components"].append((credit.get_component_display(), credit.amount_cents))
        group["total_cents"] += credit.amount_cents
        group["credited_at"] = max(group["credited_at"], credit.created_at)
    for group in groups.values():
        try:
            group["statement"] = proposal_services.statement(group["proposal"], group["entry_id"])
        except Refused as exc:
            group["statement"] = f"(no statement: {exc.message})"
    return list(groups.values())
