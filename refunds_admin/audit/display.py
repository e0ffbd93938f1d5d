"""Sentences for the history page: one per audit action (pretix's logdisplay, in small).

`describe(event)` turns an AuditEvent into what a person reads: "maria_manager approved proposal
12 (USD 30,150.00)". An action without an entry here still reads sensibly.
"""

from refunds_admin.payouts.labels import rule_name as _rule
from refunds_admin.payouts.money import display


def _money(after):
    total = after.get("total")
    if isinstance(total, int):
        return f" ({display(total, after.get('currency', ''), symbol=False)})"
    return ""


def _wallet(after):
    """Where the approval said the money goes (recorded with it since issue 9)."""
    if after.get("wallet") == "cashier":
        return f", to be paid at the cashier {after.get('wallet_identity', '')}"
    if after.get("wallet") == "ledger":
        return ", to be paid into the app's own ledger"
    return ""


def _snapshot_imported(e, before, after):
    if before:
        return (
            f"{e.actor_name} re-imported tournament {e.tournament_external_id}: snapshot "
            f"v{after.get('version')} replaces v{before.get('version')} "
            f"({after.get('entries', 0):,} entries, {after.get('active', 0):,} active)"
        )
    return (
        f"{e.actor_name} imported tournament {e.tournament_external_id} "
        f"({after.get('entries', 0):,} entries, {after.get('active', 0):,} active, "
        f"from {after.get('source', '?')})"
    )


def _incident_cancelled(e, before, after):
    if after.get("cancelled_because") == "not_resumable":
        return f"{e.actor_name} declared tournament {e.tournament_external_id} not resumable: cancelled"
    return (
        f"Tournament {e.tournament_external_id} cancelled: play did not resume within 30 minutes"
        + ("" if e.actor_name == "system" else f" (recorded by {e.actor_name})")
    )


def _proposal_prepared(e, before, after):
    verb = "prepared again" if before else "prepared"
    return (
        f"{e.actor_name} {verb} proposal {e.object_id} v{after.get('version')} "
        f"({_rule(after.get('rule'))}, {after.get('lines', 0):,} lines)"
    )


def _ledger_posted(e, before, after):
    credits, cents = after.get("credits"), after.get("total_cents")
    booked = ""
    if isinstance(credits, int) and isinstance(cents, int):
        amount = display(cents, after.get("currency", ""), symbol=False)
        booked = f": {credits:,} credits, {amount} in total"
    return f"Proposal {e.object_id} posted{booked}, matching the approved total to the cent"


SENTENCES = {
    "snapshot.imported": _snapshot_imported,
    "api_client.created": lambda e, b, a: (
        f"{e.actor_name} created API client {a.get('name')} acting as {a.get('acting_user')}"
    ),
    "incident.recorded": lambda e, b, a: (
        f"{e.actor_name} recorded incident {e.object_id} on tournament "
        f"{e.tournament_external_id}: failed at {a.get('failed_at')} ({a.get('cause')}), "
        f"rule: {_rule(a.get('rule'))}"
    ),
    "incident.rule_changed": lambda e, b, a: (
        f"Rule for incident {e.object_id} changed from {_rule(b.get('rule'))} to "
        f"{_rule(a.get('rule'))}"
    ),
    "incident.restart_attempt": lambda e, b, a: (
        f"{e.actor_name} logged a restart attempt at {a.get('attempted_at')} on incident "
        f"{e.object_id}: {'succeeded' if a.get('succeeded') else 'failed'}"
    ),
    "incident.resumed": lambda e, b, a: (
        f"{e.actor_name} marked play resumed at {a.get('resumed_at')} on incident "
        f"{e.object_id}: no payout"
    ),
    "incident.cancelled": _incident_cancelled,
    "incident.site_wide_confirmed": lambda e, b, a: (
        f"{e.actor_name} confirmed that site-wide issues impaired play (incident "
        f"{e.object_id}): rule {_rule(a.get('rule'))}"
    ),
    "proposal.prepared": _proposal_prepared,
    "proposal.submitted": lambda e, b, a: (
        f"{e.actor_name} submitted proposal {e.object_id} for approval"
    ),
    "proposal.approved": lambda e, b, a: (
        f"{e.actor_name} approved proposal {e.object_id}{_money(a)}{_wallet(a)}"
    ),
    "proposal.rejected": lambda e, b, a: f"{e.actor_name} rejected proposal {e.object_id}",
    "incident.overdue_flagged": lambda e, b, a: (
        f"Incident {e.object_id} on tournament {e.tournament_external_id} still open 30 minutes "
        f"after the failure: flagged overdue and the managers e-mailed"
    ),
    # Posting is done by the worker (actor "system"), except a manager resuming it.
    "ledger.posting_started": lambda e, b, a: (
        f"Posting of proposal {e.object_id} started: crediting the players"
    ),
    "ledger.posted": _ledger_posted,
    "ledger.posting_failed": lambda e, b, a: (
        f"Posting of proposal {e.object_id} failed and waits for a manager"
    ),
    "ledger.posting_resumed": lambda e, b, a: (
        f"{e.actor_name} resumed the posting of proposal {e.object_id}"
    ),
}


def describe(event):
    """One sentence for an audit event; the reason, when there is one, follows it."""
    before = event.before if isinstance(event.before, dict) else {}
    after = event.after if isinstance(event.after, dict) else {}
    sentence_for = SENTENCES.get(event.action)
    try:
        text = sentence_for(event, before, after) if sentence_for else None
    except (TypeError, ValueError, AttributeError):
        text = None  # an event written by an older version of the app: fall back below
    if text is None:
        text = f"{event.actor_name}: {event.action} on {event.object_type} {event.object_id}"
    if event.reason:
        text += f" — {event.reason}"
    return text
