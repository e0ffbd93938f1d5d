"""The outage's posting progress and its report: read-only selectors over proposals, the ledger's
posting jobs and the incidents of one outage."""

from collections import defaultdict

from django.db.models import Count, Sum

from refunds_admin.jobs.kinds import JobStatus
from refunds_admin.ledger.models import POSTING_JOBS, PostingJob
from refunds_admin.notifications.models import STATEMENT_JOBS, StatementJob
from refunds_admin.outages.services import incidents_of
from refunds_admin.proposals.batches import live_proposals
from refunds_admin.proposals.models import PayoutLine, PayoutProposal

Status = PayoutProposal.Status
DECIDED = (Status.APPROVED, Status.POSTING, Status.POSTED, Status.FAILED)


# The summary's word for each job status code (jobs.kinds.JobStatus), so that the badges above
# the table count what its rows say: a running job without heartbeats is "stalled, resuming",
# a queued one held back by the wallet or the database is "waiting".
SUMMARY_WORDS = {
    "queued": "queued",
    "running": "running",
    "stalled": "stalled, resuming",
    "waiting": "waiting",
    "failed": "failed",
    "done": "posted",
}


def _percent(part, whole, done=False):
    if whole == 0:
        return 100 if done else 0
    return part * 100 // whole


def posting_progress(outage):
    """One aggregated progress bar (credits, and money per currency) and a row per tournament."""
    proposals = list(live_proposals(outage).filter(status__in=DECIDED))
    jobs = {job.proposal_id: job for job in PostingJob.objects.filter(proposal__in=proposals)}
    statement_jobs = {
        job.proposal_id: job for job in StatementJob.objects.filter(proposal__in=proposals)
    }
    rows: list[dict] = []
    money: defaultdict[str, dict[str, int]] = defaultdict(
        lambda: {"posted_cents": 0, "total_cents": 0}
    )
    posted = total = 0
    states: defaultdict[str, int] = defaultdict(int)  # by the status code the rows show
    for p in proposals:
        job = jobs.get(p.pk)
        state = job.state if job else "queued"
        status = POSTING_JOBS.status(job) if job else JobStatus("queued", "Queued")
        states[status.code] += 1
        row = {
            "proposal": p,
            "tournament": p.incident.tournament,
            "state": state,
            "posted": job.posted if job else 0,
            "total": job.total if job else 0,
            "posted_cents": job.posted_cents if job else 0,
            "total_cents": p.total_cents,
            "error": job.last_error if job else "",
            # The same truthful words as each proposal's page: queued, running, stalled
            # (resuming), waiting for the wallet / the database since T, failed, posted.
            "status": status,
            "statements": STATEMENT_JOBS.status(statement_jobs[p.pk])
            if p.pk in statement_jobs
            else None,
        }
        row["percent"] = _percent(row["posted"], row["total"], state == "posted")
        rows.append(row)
        posted += row["posted"]
        total += row["total"]
        money[p.currency]["posted_cents"] += row["posted_cents"]
        money[p.currency]["total_cents"] += row["total_cents"]
    all_done = bool(proposals) and all(r["state"] in ("posted", "failed") for r in rows)
    for figures in money.values():
        figures["percent"] = _percent(figures["posted_cents"], figures["total_cents"], all_done)
    return {
        "rows": rows,
        "posted": posted,
        "total": total,
        "percent": _percent(posted, total, all_done),
        "money": dict(sorted(money.items())),
        "states": dict(states),
        # [(code, count, word)] for the summary's badges, in the order a job goes through them
        "summary": [
            (code, states[code], word) for code, word in SUMMARY_WORDS.items() if states[code]
        ],
        "count": len(rows),
        "done": all_done,
        "failed": states.get("failed", 0),
    }


# What the committed money takes the form of, per currency (and per tournament): cash paid,
# tournament money credited, tickets returned (count and value); and the policy's parts of it,
# equal shares and bounty money returned; and the overlay the house kept (not paid).
FORM_FIELDS = (
    "cash_cents", "tournament_money_cents", "tickets", "ticket_cents",
    "equal_share_cents", "bounty_refund_cents", "overlay_kept_cents",
)  # fmt: skip


def _forms(proposals) -> dict[int, dict[str, int]]:
    """{proposal id: FORM_FIELDS} of approved proposals, from their lines as approved (the
    refunds in the form paid, the equal shares and bounties) and their summaries (the overlay
    kept): what the operator committed, posted or not, in the form it is paid."""
    from refunds_admin.ledger.summary import overlay_kept_cents

    out = {p.pk: dict.fromkeys(FORM_FIELDS, 0) for p in proposals}
    sums = (
        PayoutLine.objects.filter(proposal_id__in=list(out))
        .values("proposal_id")
        .annotate(
            equal_share_cents=Sum("equal_share_cents"),
            bounty_refund_cents=Sum("bounty_refund_cents"),
        )
    )
    for row in sums:
        out[row["proposal_id"]].update(
            equal_share_cents=row["equal_share_cents"] or 0,
            bounty_refund_cents=row["bounty_refund_cents"] or 0,
        )
    for proposal_id, refunds in PayoutLine.objects.filter(
        proposal_id__in=list(out), refunds__isnull=False
    ).values_list("proposal_id", "refunds"):
        figures = out[proposal_id]
        for part in refunds or []:
            if part["method"] == "ticket":
                figures["tickets"] += 1
                figures["ticket_cents"] += part["amount_cents"]
            elif part["method"] == "tournament_money":
                figures["tournament_money_cents"] += part["amount_cents"]
    for p in proposals:
        figures = out[p.pk]
        figures["cash_cents"] = (
            p.total_cents - figures["tournament_money_cents"] - figures["ticket_cents"]
        )
        figures["overlay_kept_cents"] = overlay_kept_cents(p)
    return out


def _seconds(start, end):
    return (end - start).total_seconds() if start and end else None


def report(outage):
    """Cost per currency and per rule, players and entries paid, a row per tournament, and the
    timings from the failure to cancellation, approval and posting.

    Each cost is also given by form (FORM_FIELDS): cash, tournament money, tickets returned
    (count and value), equal shares, bounty money returned, overlay kept by the house.

    Costs count approved proposals (approved, posting, posted or failed posting): the money the
    operator committed to pay.
    """
    incidents = list(incidents_of(outage))
    proposals = {p.incident_id: p for p in live_proposals(outage)}
    # A tournament whose proposal was rejected and not prepared again: the report says so (its
    # last rejected version) instead of a blank.
    rejected = {
        p.incident_id: p
        for p in PayoutProposal.objects.filter(
            incident__in=[i.pk for i in incidents], status=PayoutProposal.Status.REJECTED
        ).order_by("version")
    }
    decided = [p for p in proposals.values() if p.status in DECIDED]
    ids = [p.pk for p in decided]
    paid = PayoutLine.objects.filter(proposal_id__in=ids, total_cents__gt=0)
    per_proposal: dict[int, tuple[int, int]] = {
        pk: (entries, players)
        for pk, entries, players in paid.values("proposal_id")
        .annotate(entries=Count("pk"), players=Count("player_id", distinct=True))
        .values_list("proposal_id", "entries", "players")
    }
    overall = paid.aggregate(entries=Count("pk"), players=Count("player_id", distinct=True))
    jobs = {
        job.proposal_id: job
        for job in PostingJob.objects.filter(proposal_id__in=ids).only(
            "proposal_id", "state", "finished_at", "posted_cents"
        )
    }
    forms = _forms(decided)
    by_currency: defaultdict[str, dict[str, int]] = defaultdict(
        lambda: {"cents": 0, "tournaments": 0} | dict.fromkeys(FORM_FIELDS, 0)
    )
    by_rule: defaultdict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: {"cents": 0, "tournaments": 0}
    )
    rows = []
    for incident in incidents:
        p = proposals.get(incident.pk)
        shown = p or rejected.get(incident.pk)
        # Only approved proposals count: the money the operator committed to pay.
        committed = p if p is not None and p.status in DECIDED else None
        job = jobs.get(committed.pk) if committed is not None else None
        entries_paid, players_paid = (
            per_proposal.get(committed.pk, (0, 0)) if committed is not None else (0, 0)
        )
        if committed is not None:
            by_currency[committed.currency]["cents"] += committed.total_cents
            by_currency[committed.currency]["tournaments"] += 1
            for field in FORM_FIELDS:
                by_currency[committed.currency][field] += forms[committed.pk][field]
            key = (committed.currency, committed.rule)
            by_rule[key]["cents"] += committed.total_cents
            by_rule[key]["tournaments"] += 1
        rows.append(
            {
                "incident": incident,
                "tournament": incident.tournament,
                "proposal": p,
                "rejected": rejected.get(incident.pk) if p is None else None,
                # The live proposal's status, or "rejected" for a tournament left at that.
                "proposal_status": shown.status if shown else "",
                "counted": committed is not None,
                "rule": (p.rule if p is not None else incident.rule),
                "currency": p.currency if p is not None else incident.tournament.currency,
                "total_cents": committed.total_cents if committed is not None else 0,
                "entries_paid": entries_paid,
                "players_paid": players_paid,
                "cancelled_at": incident.cancelled_at,
                "approved_at": committed.approved_at if committed is not None else None,
                "approved_by": (
                    committed.approved_by.get_username()
                    if committed is not None and committed.approved_by_id
                    else ""
                ),
                "posted_at": job.finished_at if job and job.state == "posted" else None,
                "posting": job.state if job else "",
                **(forms[committed.pk] if committed is not None else dict.fromkeys(FORM_FIELDS, 0)),
            }
        )
    cancelled = [r["cancelled_at"] for r in rows if r["cancelled_at"]]
    approved = [r["approved_at"] for r in rows if r["approved_at"]]
    posted = [r["posted_at"] for r in rows if r["posted_at"]]
    all_posted = bool(decided) and len(posted) == len(decided)
    timings = {
        "failed_at": outage.failed_at,
        "cancelled_at": max(cancelled) if cancelled else None,
        "approved_at": max(approved) if approved else None,
        "posted_at": max(posted) if all_posted else None,
    }
    timings["to_cancelled"] = _seconds(outage.failed_at, timings["cancelled_at"])
    timings["to_approved"] = _seconds(timings["cancelled_at"], timings["approved_at"])
    timings["to_posted"] = _seconds(timings["approved_at"], timings["posted_at"])
    timings["total"] = _seconds(outage.failed_at, timings["posted_at"])
    statuses: defaultdict[str, int] = defaultdict(int)
    for incident in incidents:
        statuses[incident.status] += 1
    return {
        "rows": rows,
        "by_currency": dict(sorted(by_currency.items())),
        "by_rule": [{"currency": c, "rule": r, **v} for (c, r), v in sorted(by_rule.items())],
        "entries_paid": overall["entries"] or 0,
        "players_paid": overall["players"] or 0,
        "tournaments": len(incidents),
        "approved": len(decided),
        "statuses": dict(statuses),
        "timings": timings,
        "all_posted": all_posted,
        "approvers": sorted({r["approved_by"] for r in rows if r["approved_by"]}),
    }
