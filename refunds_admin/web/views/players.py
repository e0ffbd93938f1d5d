from django.shortcuts import render

from refunds_admin.accounts.roles import CAN_READ

from ..access import role_required
from ..forms import PlayerLookupForm


@role_required(CAN_READ)
def player_lookup(request):
    """Every credit a player received, with the statement behind each (to answer "why did I get
    $815.33?")."""
    from refunds_admin.ledger import services as ledger_services

    form = PlayerLookupForm(request.GET or None)
    credits = None
    if form.is_valid():
        credits = ledger_services.player_credits(form.cleaned_data["player_id"].strip())
    return render(request, "web/player_lookup.html", {"form": form, "credits": credits})
