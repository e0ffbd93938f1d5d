"""The per-posting summary row the finance report reads (PostedTotal).

Written by the posting job in the transaction that marks a proposal posted, so the report's
totals are the ledger's totals to the cent:
- by method (cash paid, tournament money credited, tickets returned) and in all from the
  credits themselves (one aggregate over the proposal's credits);
- by component (buy-in refunds, next prizes, chip equity, fee refunds, equal shares, bounty
  refunds) from the approved lines: a refund given back in the form it was paid is credited by
  method, not by component, and only the line still says which part was the bounty. Posting
  checked beforehand that the credits are the approved lines to the cent, and the row's check
  constraints insist that both views add up to the same total.
"""

from django.db.models import Count, Q, Sum

from refunds_admin.payouts.money import AmountError, parse_amount
from refunds_admin.proposals.models import PayoutLine

from .models import COMPONENT_FIELDS, Credit, Method, PostedTotal
from .writers import sort_memory

# The components PostedTotal has a column for (`<component>_cents`).
PER_COMPONENT = tuple(
    str(component)
    for component, _ in COMPONENT_FIELDS
    if any(f.name == f"{component}_cents" for f in PostedTotal._meta.fields)
)


def overlay_kept_cents(proposal) -> int:
    """The overlay the house kept under this proposal (its summary's `overlay_kept`), 0 when
    the policy pays the overlay out or there is no guarantee."""
    try:
        return parse_amount(str((proposal.summary or {}).get("overlay_kept") or "0.00"))
    except AmountError:
        return 0


def component_sums(proposal_id) -> dict[str, int]:
    """{component: cents} of a proposal's approved lines, for every component a line stores."""
    sums = PayoutLine.objects.filter(proposal_id=proposal_id).aggregate(
        **{str(component): Sum(field) for component, field in COMPONENT_FIELDS}
    )
    return {component: cents or 0 for component, cents in sums.items()}


def method_sums(credits) -> dict:
    """Credits, players and cents of a queryset of credits, in all and per method; tickets
    counted. One aggregate."""
    return credits.aggregate(
        credits=Count("pk"),
        players=Count("player_id", distinct=True),
        cents=Sum("amount_cents"),
        tickets=Count("pk", filter=Q(method=Method.TICKET)),
        **{
            f"{method}_cents": Sum("amount_cents", filter=Q(method=method))
            for method in Method.values
        },
    )


def record_posted_total(proposal, *, posted_at):
    credits = Credit.objects.filter(proposal_id=proposal.pk)
    with sort_memory():  # count(DISTINCT player_id) sorts the whole proposal's credits
        sums = method_sums(credits)
    components = component_sums(proposal.pk)
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
            "tickets": sums["tickets"],
            "overlay_kept_cents": overlay_kept_cents(proposal),
            **{f"{method}_cents": sums[f"{method}_cents"] or 0 for method in Method.values},
            **{f"{component}_cents": components.get(component, 0) for component in PER_COMPONENT},
        },
    )
