"""What the pages and the reconciliation read from the ledger: the progress bar, a player's
credits and balances, approved totals against the ledger and the cashier. Reads only: every
change goes through posting.py."""

from django.db.models import Count, Sum

from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.proposals.posting_order import CASHIER, describe_wallet

from .models import COMPONENT_FIELDS, Component, Credit, PostingJob
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
    names = dict(Component.choices)
    rows = [
        {
            "key": credit.key,
            "component": names.get(credit.component, credit.component),
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
    return sorted(rows, key=lambda row: order.get(str(row["key"]).rsplit("/", 1)[-1], 99))


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
    try:
        held = cashier.credits_for(f"proposal {proposal.pk} ")
    except (CashierUnavailable, CashierStopped) as exc:
        row["problems"].append(f"cashier unreachable: {exc}")
        return
    row["cashier_cents"] = sum(c["amount_cents"] for c in held)
    ours = dict(Credit.objects.filter(proposal_id=proposal.pk).values_list("key", "amount_cents"))
    theirs = {}
    twice = 0
    for c in held:
        twice += c["key"] in theirs
        theirs[c["key"]] = c["amount_cents"]
    if twice:
        row["problems"].append(f"the cashier holds {twice} credits twice")
    if proposal.status == Status.POSTED and theirs != ours:
        missing = len(set(ours) - set(theirs))
        extra = len(set(theirs) - set(ours))
        differ = sum(1 for k in set(ours) & set(theirs) if ours[k] != theirs[k])
        row["problems"].append(
            f"cashier differs: {missing} missing, {extra} unknown, {differ} amounts differ"
        )
    elif set(theirs) - set(ours):
        row["problems"].append("the cashier holds credits the ledger does not")
