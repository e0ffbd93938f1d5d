"""What the pages and the reconciliation read from the ledger: the progress bar, a player's
credits and balances, approved totals against the ledger and the cashier. Reads only: every
change goes through posting.py."""

from typing import Any

from django.db.models import Count, Q, Sum

from refunds_admin.jobs.kinds import JobStatus
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.proposals.posting_order import CASHIER, describe_wallet

from .models import (
    COMPONENT_FIELDS,
    POSTING_JOBS,
    REFUND_COMPONENTS,
    CashierDelivery,
    Component,
    Credit,
    Method,
    PostingJob,
)
from .reconciliation import compare
from .wallets import CashierStopped, CashierUnavailable, CashierWallet, cashier_at, wallet_problem

Status = PayoutProposal.Status
State = PostingJob.State


def posting_progress(proposal: PayoutProposal) -> dict:
    """What the progress bar shows. Before approval there is no job: state None; approved but
    not yet picked up by a worker (the first run creates the job): queued. `wallet` says where
    the money goes, as recorded at approval."""
    job = PostingJob.objects.filter(proposal_id=proposal.pk).first()
    if job is None:
        approved = proposal.status == Status.APPROVED
        return {
            "posted": 0,
            "total": 0,
            "posted_cents": 0,
            "total_cents": proposal.total_cents,
            "state": State.QUEUED if approved else None,
            "status": JobStatus("queued", "Queued") if approved else None,
            "error": "",
            "percent": 0,
            "wallet": describe_wallet(proposal.wallet, proposal.wallet_identity)
            if proposal.wallet
            else "",
        }
    percent = 100 if job.total == 0 else (100 * job.posted) // job.total
    if job.state == State.POSTED:
        percent = 100
    return {
        "posted": job.posted,
        "total": job.total,
        "posted_cents": job.posted_cents,
        "total_cents": job.total_cents,
        "state": job.state,
        # queued, running, stalled (resuming), waiting for the wallet / the database since T,
        # failed (with the reason), posted: the same words on every job page (jobs.kinds)
        "status": POSTING_JOBS.status(job),
        "error": job.last_error,
        "percent": percent,
        "attempts": job.attempts,
        "heartbeat_at": job.heartbeat_at,
        "wallet": describe_wallet(job.wallet, job.wallet_identity),
    }


def player_credits(player_id: str) -> dict:
    """Every credit a player received, newest proposal first, with balances per currency."""
    credits = list(
        Credit.objects.filter(player_id=player_id)
        .select_related("proposal__incident__tournament")
        .order_by("-proposal_id", "entry_id", "key")
    )
    balances: dict[str, int] = {}
    for credit in credits:
        balances[credit.currency] = balances.get(credit.currency, 0) + credit.amount_cents
    return {"credits": credits, "balances": balances}


def entry_credits(proposal: PayoutProposal, entry_id: str) -> list[dict]:
    """One entry's credits in statement order, each with its component's name and
    `cashier_reference` (the cashier's credit id once it confirmed the credit, else "")."""
    order = {str(component): i for i, (component, _) in enumerate(COMPONENT_FIELDS)}
    order.update({str(c): len(order) + i for i, c in enumerate(REFUND_COMPONENTS.values())})
    names = dict(Component.choices)
    rows = [
        {
            "key": credit.key,
            "component": names.get(credit.component, credit.component),
            "component_id": credit.component,
            "method": credit.method,
            "ticket_id": credit.ticket_id,
            "currency": credit.currency,
            "amount_cents": credit.amount_cents,
            "created_at": credit.created_at,
            "cashier_reference": getattr(
                getattr(credit, "delivery", None), "cashier_credit_id", ""
            ),
        }
        for credit in Credit.objects.filter(
            proposal_id=proposal.pk, entry_id=entry_id
        ).select_related("delivery")
    ]
    return sorted(rows, key=lambda row: (order.get(str(row["component_id"]), 99), row["ticket_id"]))


def player_balances(player_id: str) -> dict[str, int]:
    """{currency: cents}: a player's balance follows from their credits."""
    return dict(
        Credit.objects.filter(player_id=player_id)
        .values("currency")
        .annotate(cents=Sum("amount_cents"))
        .values_list("currency", "cents")
    )


def reconcile(proposal_ids: list[int] | None = None) -> list[dict]:
    """Per approved proposal (or only those in `proposal_ids`): approved total vs credits booked,
    and vs the wallet the proposal was approved to be paid into, whatever this process's own
    settings. Rows with `ok` False are mismatches; a proposal paid into a cashier this process
    is not configured for cannot be checked, and says so (not ok)."""
    rows = []
    proposals = (
        PayoutProposal.objects.filter(
            status__in=[Status.APPROVED, Status.POSTING, Status.POSTED, Status.FAILED]
        )
        .select_related("posting_job")
        .order_by("pk")
    )
    if proposal_ids is not None:
        proposals = proposals.filter(pk__in=proposal_ids)
    cashiers: dict[str, CashierWallet] = {}
    for proposal in proposals:
        job = getattr(proposal, "posting_job", None)
        wallet = job.wallet if job else proposal.wallet
        identity = job.wallet_identity if job else proposal.wallet_identity
        booked = Credit.objects.filter(proposal_id=proposal.pk).aggregate(
            n=Count("pk"), cents=Sum("amount_cents")
        )
        row = {
            "proposal": proposal.pk,
            "status": proposal.status,
            "currency": proposal.currency,
            "wallet": wallet,
            "wallet_identity": identity,
            "approved_cents": proposal.total_cents,
            "booked_cents": booked["cents"] or 0,
            "booked_credits": booked["n"],
            "cashier_cents": None,
            "problems": [],
        }
        row["by_method"] = {
            method: {"ledger_cents": cents, "cashier_cents": None}
            for method, cents in Credit.objects.filter(proposal_id=proposal.pk)
            .values("method")
            .annotate(cents=Sum("amount_cents"))
            .order_by("method")
            .values_list("method", "cents")
        }
        if proposal.status == Status.POSTED and row["booked_cents"] != proposal.total_cents:
            row["problems"].append("posted, but the ledger differs from the approved total")
        if row["booked_cents"] > proposal.total_cents:
            row["problems"].append("the ledger holds more than was approved")
        if wallet == CASHIER:
            if wallet_problem(wallet, identity):
                # Loud, never "ok": this process cannot see the wallet the money went to.
                row["problems"].append(
                    f"paid into {describe_wallet(wallet, identity)}, which this process is not "
                    f"configured for: cannot check it (set CASHIER_URL={identity})"
                )
            elif booked["n"] or proposal.status == Status.POSTED:
                cashier = cashiers.setdefault(identity, cashier_at(identity))
                _compare_with_cashier(proposal, cashier, row)
        row["ok"] = not row["problems"]
        rows.append(row)
    return rows


def _compare_with_cashier(proposal, cashier, row):
    """Per credit, per method and per ticket (ledger.reconciliation)."""
    try:
        held = cashier.credits_for(f"proposal {proposal.pk} ")
    except (CashierUnavailable, CashierStopped) as exc:
        row["problems"].append(f"cashier unreachable: {exc}")
        return
    row["cashier_cents"] = sum(c["amount_cents"] for c in held)
    ours = Credit.objects.filter(proposal_id=proposal.pk).values(
        "key", "amount_cents", "method", "ticket_id"
    )
    found = compare(ours, held)
    row["by_method"] = {
        method: {
            "ledger_cents": found.ledger_by_method.get(method, 0),
            "cashier_cents": found.cashier_by_method.get(method, 0),
        }
        for method in sorted(set(found.ledger_by_method) | set(found.cashier_by_method))
    }
    row["tickets"] = {"ledger": found.ledger_tickets, "cashier": found.cashier_tickets}
    row["problems"].extend(found.problems(complete=proposal.status == Status.POSTED))


# ---------------------------------------------------------------------------------------------
# By the form the money took (cash, tournament money, tickets): the posting page, player lookup
# ---------------------------------------------------------------------------------------------

METHOD_LABELS = dict(Method.choices)
_APPLIED = CashierDelivery.State.APPLIED
_FAILED = CashierDelivery.State.FAILED


def credits_by_method(proposal_id: int) -> list[dict]:
    """Per method booked for a proposal: credits and cents booked, and how many of them the
    cashier confirmed or refused (0 when the ledger is the wallet). Cash first."""
    rows = (
        Credit.objects.filter(proposal_id=proposal_id)
        .values("method")
        .annotate(
            credits=Count("pk"),
            cents=Sum("amount_cents"),
            confirmed=Count("pk", filter=Q(delivery__state=_APPLIED)),
            confirmed_cents=Sum("amount_cents", filter=Q(delivery__state=_APPLIED)),
            refused=Count("pk", filter=Q(delivery__state=_FAILED)),
        )
    )
    order = {method: i for i, method in enumerate(Method.values)}
    out = [
        {**row, "label": METHOD_LABELS.get(row["method"], row["method"])}
        for row in sorted(rows, key=lambda r: order.get(r["method"], 99))
    ]
    for row in out:
        row["confirmed_cents"] = row["confirmed_cents"] or 0
    return out


def refused_credits(proposal_id: int, limit: int = 50) -> list[Any]:
    """The credits the cashier refused (a human must look), tickets with their ticket id, and
    the cashier's reason."""
    return list(
        CashierDelivery.objects.filter(credit__proposal_id=proposal_id, state=_FAILED)
        .order_by("credit_id")
        .values(
            "credit_id", "error", "credit__entry_id", "credit__player_id", "credit__method",
            "credit__ticket_id", "credit__amount_cents", "credit__currency",
        )[:limit]
    )  # fmt: skip


def player_refund_forms(player_id: str) -> dict:
    """A player's refunds by form: cash and tournament money per currency, and every ticket
    given back (newest proposal first) with where it stands at the cashier."""
    sums = (
        Credit.objects.filter(player_id=player_id)
        .values("method", "currency")
        .annotate(cents=Sum("amount_cents"))
        .order_by("currency")
    )
    by_method: dict[str, dict[str, int]] = {}
    for row in sums:
        by_method.setdefault(row["method"], {})[row["currency"]] = row["cents"]
    tickets = list(
        Credit.objects.filter(player_id=player_id, method=Method.TICKET)
        .select_related("proposal__incident__tournament", "delivery")
        .order_by("-proposal_id", "entry_id", "ticket_id")
    )
    return {
        "cash": sorted(by_method.get(Method.CASH, {}).items()),
        "tournament_money": sorted(by_method.get(Method.TOURNAMENT_MONEY, {}).items()),
        "tickets": [
            {
                "ticket_id": c.ticket_id,
                "amount_cents": c.amount_cents,
                "currency": c.currency,
                "entry_id": c.entry_id,
                "proposal": c.proposal,
                "tournament": c.proposal.incident.tournament,
                "cashier": getattr(getattr(c, "delivery", None), "state", ""),
                "error": getattr(getattr(c, "delivery", None), "error", ""),
            }
            for c in tickets
        ],
    }
