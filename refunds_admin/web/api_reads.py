"""The platform's reads, closing the loop after an import or an outage: a tournament's
incidents, a proposal's status and totals, its posting job's progress, and one player's
statement. GET with the same token; the client's acting user needs a role that may read
(CAN_READ), as on the pages. An id the app does not know is a 404 in the API's error shape.

Thin: each reads through the selectors the pages use (incidents/selectors.py,
web/queries.py, web/progress.progress_of, ledger/selectors.entry_credits,
proposals/services.statement).
"""

from typing import Annotated

from django.http import JsonResponse
from ninja import Path, Router

from refunds_admin.accounts.roles import CAN_READ, has_role
from refunds_admin.errors import Refused
from refunds_admin.incidents import selectors as incident_selectors
from refunds_admin.ledger import selectors as ledger_selectors
from refunds_admin.payouts.snapshot import MAX_BIGINT
from refunds_admin.proposals import services as proposal_services
from refunds_admin.proposals.figures import COMPONENTS

from . import api_schemas as schemas
from . import queries
from .api import REFUSALS, _error
from .progress import progress_of

router = Router(tags=["reads"])
# A proposal id that is not a whole number the database can hold is a 400 naming
# `path.proposal_id` (api_urls._invalid); one that names no proposal, a 404.
READ_ANSWERS = {400: schemas.ApiError, **REFUSALS, 404: schemas.ApiError}
ProposalId = Annotated[int, Path(ge=1, le=MAX_BIGINT, description="The proposal's id.")]


def _may_not_read(request):
    user = request.auth.acting_user
    if has_role(user, CAN_READ):
        return None
    return _error(403, f"{user.get_username()} may not read tournaments and proposals.")


def _not_found(what):
    return _error(404, f"No such {what}.")


def _tournament_ref(tournament):
    return {"id": tournament.pk, "external_id": tournament.external_id}


def _iso(moment):
    return moment.isoformat() if moment else None


@router.get(
    "/tournaments/{path:external_id}/incidents",
    operation_id="tournament_incidents",
    summary="A tournament's incidents, with their proposals",
    response={200: schemas.TournamentIncidents, **READ_ANSWERS},
)
def tournament_incidents(request, external_id: str):
    """Every incident of the tournament (by the platform's external id), oldest failure first."""
    if refused := _may_not_read(request):
        return refused
    tournament = incident_selectors.tournament_incidents(external_id)
    if tournament is None:
        return _not_found("tournament")
    incidents = [
        {
            "id": i.pk,
            "status": i.status,
            "cause": i.cause,
            "failed_at": i.failed_at.isoformat(),
            "deadline": i.deadline.isoformat(),
            "rule": i.rule,
            "site_wide_issue": i.site_wide_issue,
            "resumed_at": _iso(i.resumed_at),
            "cancelled_at": _iso(i.cancelled_at),
            "proposals": [
                {"id": p.pk, "version": p.version, "status": p.status} for p in i.proposals.all()
            ],
        }
        for i in tournament.incidents.all()
    ]
    return JsonResponse({"tournament": _tournament_ref(tournament), "incidents": incidents})


@router.get(
    "/proposals/{proposal_id}",
    operation_id="proposal",
    summary="A proposal's status and totals",
    response={200: schemas.ProposalOut, **READ_ANSWERS},
)
def proposal(request, proposal_id: ProposalId):
    if refused := _may_not_read(request):
        return refused
    p = queries.proposal_by_id(proposal_id)
    if p is None:
        return _not_found("proposal")
    figures = queries.proposal_figures(p)
    components = figures.get("components") or {}
    return JsonResponse(
        {
            "id": p.pk,
            "version": p.version,
            "status": p.status,
            "status_label": p.get_status_display(),
            "tournament": _tournament_ref(p.incident.tournament),
            "incident": p.incident_id,
            "rule": p.rule,
            "currency": p.currency,
            "policy": {
                "id": p.policy_id,
                "version": p.policy_version_number,
                "sha256": p.policy_sha256,
            },
            "fingerprint": p.fingerprint,
            "lines": p.lines_count,
            "total_cents": p.total_cents,
            "components_cents": {name: int(components.get(name, 0)) for name in COMPONENTS},
            "refunds_by_method": figures.get("refunds_by_method") or {},
            "summary": p.summary,
            "warnings": p.warnings,
        }
    )


@router.get(
    "/proposals/{proposal_id}/posting",
    operation_id="posting_progress",
    summary="The posting job's progress",
    response={200: schemas.PostingProgress, **READ_ANSWERS},
)
def posting(request, proposal_id: ProposalId):
    """How far posting an approved proposal has come: the same figures as its progress bar."""
    if refused := _may_not_read(request):
        return refused
    p = queries.proposal_by_id(proposal_id)
    if p is None:
        return _not_found("proposal")
    progress = progress_of(p)
    status = progress.get("status")
    return JsonResponse(
        {
            "proposal": p.pk,
            "state": progress["state"],
            "status": status.code if status else None,
            "status_label": status.label if status else None,
            "done": progress["done"],
            "posted": progress["posted"],
            "total": progress["total"],
            "posted_cents": progress["posted_cents"],
            "total_cents": progress["total_cents"],
            "percent": progress["percent"],
            "error": progress["error"] or "",
            "attempts": progress.get("attempts"),
            "heartbeat_at": _iso(progress.get("heartbeat_at")),
            "wallet": progress["wallet"],
        }
    )


@router.get(
    "/proposals/{proposal_id}/statements/{path:entry_id}",
    operation_id="statement",
    summary="One player's statement, by proposal and entry",
    response={200: schemas.StatementOut, **READ_ANSWERS, 409: schemas.ApiError},
)
def statement(request, proposal_id: ProposalId, entry_id: str):
    """The entry's statement as the player reads it (the policy's layout, the same text as the
    e-mail), its amounts, and the credits posted for it."""
    if refused := _may_not_read(request):
        return refused
    p = queries.proposal_by_id(proposal_id)
    if p is None:
        return _not_found("proposal")
    line = queries.proposal_line(p, entry_id)
    if line is None:
        return _not_found(f"entry in proposal {p.pk}")
    try:
        text = proposal_services.statement(p, entry_id)
    except Refused as e:
        # The stored snapshot no longer gives the stored lines: no statement is made up.
        return _error(409, e.message, e.problems)
    credits = ledger_selectors.entry_credits(p, entry_id)
    return JsonResponse(
        {
            "proposal": p.pk,
            "entry_id": line.entry_id,
            "player_id": line.player_id,
            "screen_name": line.screen_name,
            "currency": p.currency,
            "total_cents": line.total_cents,
            "amounts_cents": {name: getattr(line, f"{name}_cents") for name in COMPONENTS},
            "text": text,
            "credits": [
                {
                    "key": c["key"],
                    "component": str(c["component"]),
                    "method": c["method"],
                    "ticket_id": c["ticket_id"] or "",
                    "currency": c["currency"],
                    "amount_cents": c["amount_cents"],
                    "cashier_reference": c["cashier_reference"] or "",
                }
                for c in credits
            ],
        }
    )
