"""The per-posting summary row the finance report reads (PostedTotal).

Written by the posting job in the transaction that marks a proposal posted, from the credits
themselves (one aggregate over the proposal's credits, through the primary-key order), so the
report's totals are the ledger's totals to the cent.
"""

from django.db.models import Count, Q, Sum

from .models import Component, Credit, PostedTotal
from .writers import sort_memory


def record_posted_total(proposal, *, posted_at):
    credits = Credit.objects.filter(proposal_id=proposal.pk)
    with sort_memory():  # count(DISTINCT player_id) sorts the whole proposal's credits
        sums = credits.aggregate(
            credits=Count("pk"),
            players=Count("player_id", distinct=True),
            cents=Sum("amount_cents"),
            **{
                component.value: Sum("amount_cents", filter=Q(component=component))
                for component in Component
            },
        )
    incident = proposal.incident
    PostedTotal.objects.update_or_create(
        proposal_id=proposal.pk,
        defaults={
            "posted_at": posted_at,
            "failed_at": incident.failed_at,
            "currency": proposal.currency,
            "rule": proposal.rule,
            "cause": incident.cause,
            "credits": sums["credits"],
            "players": sums["players"],
            "cents": sums["cents"] or 0,
            "buy_in_refund_cents": sums[Component.BUY_IN_REFUND.value] or 0,
            "next_prize_cents": sums[Component.NEXT_PRIZE.value] or 0,
            "chip_equity_cents": sums[Component.CHIP_EQUITY.value] or 0,
            "fee_refund_cents": sums[Component.FEE_REFUND.value] or 0,
            "equal_share_cents": sums[Component.EQUAL_SHARE.value] or 0,
            "bounty_refund_cents": sums[Component.BOUNTY_REFUND.value] or 0,
        },
    )
