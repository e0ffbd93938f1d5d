"""Sentences for the history page: one per audit action (pretix's logdisplay, in small).

`describe(event)` turns an AuditEvent into what a person reads: "maria_manager approved proposal
12 (USD 30,150.00)". An action without an entry here still reads sensibly.
"""

import json
from datetime import datetime

from django.utils import timezone

from refunds_admin.payouts.labels import rule_label
from refunds_admin.payouts.labels import rule_name as _rule
from refunds_admin.payouts.money import display, format_cents
from refunds_admin.zones import zone_name


def when(value):
    """An ISO time recorded in an event, in the reader's time zone (the active one), named:
    "2026-11-30 07:20:13 CET". Anything that is not an ISO time is returned as it is."""
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if timezone.is_naive(moment):
        return value
    local = timezone.localtime(moment)
    return f"{local:%Y-%m-%d %H:%M:%S} {zone_name(local)}"


def _cause(value):
    return VALUE_LABELS["cause"].get(value, (value or "?").replace("_", " "))


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


def _confirmed(after):
    """How the decision was confirmed (accounts.mfa.evidence); events written before it was
    recorded say nothing."""
    factor = str(after.get("second_factor") or "")
    if factor.startswith("password and "):
        return ", with their password and an authenticator code"
    if factor:
        return ", with an authenticator code"
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


def _changes(before, after):
    """ "is_staff False → True, email '' → 'a@b'": what a change of a user or client did."""
    return ", ".join(f"{k} {before.get(k)!r} → {after.get(k)!r}" for k in after) or "no change"


def _list_change(field):
    def sentence(e, before, after):
        old, new = set(before.get(field) or []), set(after.get(field) or [])
        parts = [f"+{n}" for n in sorted(new - old)] + [f"-{n}" for n in sorted(old - new)]
        what = {"groups": "roles", "user_permissions": "permissions", "permissions": "permissions"}
        owner = "group" if e.object_type == "group" else "user"
        return (
            f"{e.actor_name} changed the {what[field]} of {owner} {e.object_id}: "
            f"{' '.join(parts)} (now: {', '.join(sorted(new)) or 'none'})"
        )

    return sentence


def _signin(e, before, after):
    return (
        f"Sign-in locked out for {after.get('username')!r} from {after.get('ip') or e.ip or '?'} "
        f"after {after.get('failures', '?')} failed attempts ({after.get('where', 'sign-in')})"
    )


ACCESS_SENTENCES = {
    "user.created": lambda e, b, a: (
        f"{e.actor_name} created user {a.get('username')!r}"
        + (" (superuser)" if a.get("is_superuser") else "")
        + (" (staff)" if a.get("is_staff") and not a.get("is_superuser") else "")
    ),
    "user.changed": lambda e, b, a: f"{e.actor_name} changed user {e.object_id}: {_changes(b, a)}",
    "user.deleted": lambda e, b, a: f"{e.actor_name} deleted user {b.get('username')!r}",
    "user.groups_changed": _list_change("groups"),
    "user.permissions_changed": _list_change("user_permissions"),
    "group.permissions_changed": _list_change("permissions"),
    "group.created": lambda e, b, a: f"{e.actor_name} created role {a.get('name')!r}",
    "group.renamed": lambda e, b, a: (
        f"{e.actor_name} renamed role {b.get('name')!r} to {a.get('name')!r}"
    ),
    "group.deleted": lambda e, b, a: f"{e.actor_name} deleted role {b.get('name')!r}",
    "permission.created": lambda e, b, a: (
        f"{e.actor_name} created permission {a.get('permission')}"
    ),
    "permission.changed": lambda e, b, a: (
        f"{e.actor_name} changed permission {a.get('permission')}"
    ),
    "permission.deleted": lambda e, b, a: (
        f"{e.actor_name} deleted permission {b.get('permission')}"
    ),
    "api_client.changed": lambda e, b, a: (
        f"{e.actor_name} changed API client {e.object_id}: {_changes(b, a)}"
    ),
    "api_client.deleted": lambda e, b, a: f"{e.actor_name} deleted API client {b.get('name')}",
    "signin.locked_out": _signin,
    "mfa.device_confirmed": lambda e, b, a: (
        f"{e.actor_name} confirmed an authenticator app ({a.get('device')}) for two-factor sign-in"
    ),
    "mfa.device_unconfirmed": lambda e, b, a: (
        f"{e.actor_name} switched off authenticator app {a.get('device')} of user {e.object_id}"
    ),
    "mfa.device_removed": lambda e, b, a: (
        f"{e.actor_name} removed authenticator app {b.get('device')} of user {b.get('user')}"
    ),
    "signin.record_deleted": lambda e, b, a: (
        f"{e.actor_name} deleted a sign-in record ({b.get('kind')}) of {b.get('username')!r} "
        f"from {b.get('ip') or '?'}"
    ),
}

SENTENCES = {
    **ACCESS_SENTENCES,
    "snapshot.imported": _snapshot_imported,
    "api_client.created": lambda e, b, a: (
        f"{e.actor_name} created API client {a.get('name')} acting as {a.get('acting_user')}"
    ),
    "incident.recorded": lambda e, b, a: (
        f"{e.actor_name} recorded incident {e.object_id} on tournament "
        f"{e.tournament_external_id}: failed at {when(a.get('failed_at'))} "
        f"({_cause(a.get('cause'))}), "
        f"rule: {_rule(a.get('rule'))}"
    ),
    "incident.rule_changed": lambda e, b, a: (
        f"Rule for incident {e.object_id} changed from {_rule(b.get('rule'))} to "
        f"{_rule(a.get('rule'))}"
    ),
    "incident.restart_attempt": lambda e, b, a: (
        f"{e.actor_name} logged a restart attempt at {when(a.get('attempted_at'))} on incident "
        f"{e.object_id}: {'succeeded' if a.get('succeeded') else 'failed'}"
    ),
    "incident.resumed": lambda e, b, a: (
        f"{e.actor_name} marked play resumed at {when(a.get('resumed_at'))} on incident "
        f"{e.object_id}: no payout"
    ),
    "incident.cancelled": _incident_cancelled,
    "incident.site_wide_confirmed": lambda e, b, a: (
        # An outage's finding applied to a tournament added later stays its author's.
        f"{e.actor_name} applied {a['finding_by']}'s finding that site-wide issues impaired "
        f"play to incident {e.object_id}: rule {_rule(a.get('rule'))}"
        if a.get("finding_by")
        # Recorded since the finding's words were: the policy's own (its management_finding).
        else f"{e.actor_name} confirmed management's finding “{a['finding']}” under "
        f"{a.get('policy')} (incident {e.object_id}): rule {_rule(a.get('rule'))}"
        if a.get("finding")
        else f"{e.actor_name} confirmed that site-wide issues impaired play (incident "
        f"{e.object_id}): rule {_rule(a.get('rule'))}"
    ),
    "proposal.prepared": _proposal_prepared,
    "proposal.submitted": lambda e, b, a: (
        f"{e.actor_name} submitted proposal {e.object_id} for approval"
    ),
    "proposal.approved": lambda e, b, a: (
        f"{e.actor_name} approved proposal {e.object_id}{_money(a)}{_wallet(a)}{_confirmed(a)}"
    ),
    "proposal.rejected": lambda e, b, a: f"{e.actor_name} rejected proposal {e.object_id}",
    "notifications.statement_copy_sent": lambda e, b, a: (
        f"{e.actor_name} sent player {a.get('player')} their statement of proposal "
        f"{e.object_id} to {a.get('address')}"
    ),
    "proposal.superseded": lambda e, b, a: (
        f"{e.actor_name} prepared proposal {e.object_id} again: this version is superseded by "
        "the next one (kept, to compare)"
    ),
    "proposal.withdrawn": lambda e, b, a: (
        f"{e.actor_name} withdrew the submission of proposal {e.object_id}: back to draft"
    ),
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
    "ledger.posting_recovered": lambda e, b, a: (
        f"Posting of proposal {e.object_id} going again after: {b.get('error') or 'a stop'}"
    ),
    "ledger.posting_resumed": lambda e, b, a: (
        f"{e.actor_name} resumed the posting of proposal {e.object_id}"
    ),
    "notifications.statements_scheduled": lambda e, b, a: (
        f"Statements of proposal {e.object_id} queued for {a.get('players', 0):,} players by "
        f"{a.get('channel')} ({a.get('no_address', 0):,} without an address)"
    ),
    "notifications.statements_sent": lambda e, b, a: (
        f"Statements of proposal {e.object_id} sent: {a.get('sent', 0):,} sent, "
        f"{a.get('failed', 0):,} failed, {a.get('no_address', 0):,} without an address"
    ),
    "notifications.statements_stopped": lambda e, b, a: (
        f"Sending the statements of proposal {e.object_id} stopped"
    ),
    "notifications.preferences_changed": lambda e, b, a: (
        f"{e.actor_name} now gets these staff e-mails: {', '.join(a.get('enabled', [])) or 'none'}"
    ),
    "notifications.statements_retried": lambda e, b, a: (
        f"{e.actor_name} sent {a.get('retried', 0):,} failed statements of proposal "
        f"{e.object_id} again"
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


# --------------------------------------------------------------------------------------------
# Before and after, as a person reads them
# --------------------------------------------------------------------------------------------

KEY_LABELS = {
    "status": "Status",
    "rule": "Rule",
    "total": "Total",
    "total_cents": "Total",
    "lines": "Lines",
    "version": "Version",
    "snapshot_version": "Snapshot version",
    "fingerprint": "Fingerprint",
    "sha256": "SHA-256",
    "currency": "Currency",
    "cancelled_because": "Cancelled because",
    "site_wide_issue": "Site-wide issue",
    "failed_at": "Failed at",
    "resumed_at": "Resumed at",
    "attempted_at": "Attempted at",
    "succeeded": "Succeeded",
    "cause": "Cause",
    "entries": "Entries",
    "active": "Active entries",
    "source": "Source",
    "credits": "Credits",
    "before_start": "Failed before the start",
}
VALUE_LABELS = {
    "cancelled_because": {
        "window_passed": "not resumed within 30 minutes",
        "not_resumable": "declared not resumable",
    },
    "cause": {
        "server_crash": "server crash",
        "client_software": "client software",
        "ddos": "DDoS",
    },
}
OBJECT_LABELS = {"payoutproposal": "proposal", "apiclient": "API client"}
MONEY_KEYS = {"total", "total_cents", "amount", "approved_cents", "booked_cents"}
SHORTENED_KEYS = {"fingerprint", "sha256"}
_ABSENT = object()


def for_export(data, currency=""):
    """An event's before/after for the audit CSV: money as an amount with its currency
    ("USD 1012.00", the key without "_cents"), never raw cents; everything else as it is.
    Per-currency totals ({"USD": 101200}) become {"USD": "USD 1012.00"}."""
    if not isinstance(data, dict):
        return data
    currency = data.get("currency") or currency
    out: dict[str, object] = {}
    for key, value in data.items():
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if is_int and (key in MONEY_KEYS or key.endswith("_cents")):
            out[key.removesuffix("_cents")] = f"{currency} {format_cents(value)}".strip()
        elif key == "totals" and isinstance(value, dict):
            out[key] = {
                c: f"{c} {format_cents(v)}" if isinstance(v, int) else v for c, v in value.items()
            }
        elif isinstance(value, dict):
            out[key] = for_export(value, currency)
        else:
            out[key] = value
    return out


def _value(key, value, currency):
    if value is None or value == "":  # nothing recorded (a ledger approval's wallet identity)
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key in MONEY_KEYS and isinstance(value, int):
        return display(value, currency, symbol=False)
    if key == "rule":
        return rule_label(value)
    if key in SHORTENED_KEYS and isinstance(value, str) and len(value) > 16:
        return f"{value[:12]}…"
    if key in VALUE_LABELS and value in VALUE_LABELS[key]:
        return VALUE_LABELS[key][value]
    if key.endswith("_at"):
        return when(value)
    if isinstance(value, int):
        return f"{value:,}" if key not in ("version", "snapshot_version") else str(value)
    if isinstance(value, str):
        return value.replace("_", " ") if key in ("status", "cause", "source") else value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def change_rows(event):
    """An audit event's before/after as rows a person reads: one per key, with the key's label,
    amounts as money with their currency, rule codes as their labels, times in the reader's
    zone, fingerprints shortened (the full value is in `full`)."""

    def as_dict(value):
        if value is None:
            return {}
        return value if isinstance(value, dict) else {"value": value}

    before, after = as_dict(event.before), as_dict(event.after)
    currency = after.get("currency") or before.get("currency") or ""
    rows = []
    for key in [*before, *(k for k in after if k not in before)]:
        if key == "currency" and any(k in MONEY_KEYS for k in (*before, *after)):
            continue  # shown with the amounts
        old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
        rows.append(
            {
                "key": KEY_LABELS.get(key, key.replace("_", " ").capitalize()),
                "before": None if old is _ABSENT else _value(key, old, currency),
                "after": None if new is _ABSENT else _value(key, new, currency),
                "full": new if key in SHORTENED_KEYS and new is not _ABSENT else "",
                "changed": old is not _ABSENT and new is not _ABSENT and old != new,
            }
        )
    return rows


def _tournaments(after):
    names = after.get("tournaments") or []
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{len(names)} tournament{'s' if len(names) != 1 else ''} ({shown})"


def _proposals(after):
    count = after.get("count") or 0
    return f"{count} proposal{'s' if count != 1 else ''}"


def _totals(after):
    totals = after.get("totals") or {}
    return ", ".join(display(v, c, symbol=False) for c, v in totals.items() if isinstance(v, int))


def _version(a):
    return f"{a.get('policy')} v{a.get('version')}"


# Cancellation policies: versions proposed and decided (four eyes), the default, and the policy
# a tournament runs under.
SENTENCES.update(
    {
        "policy.version_proposed": lambda e, b, a: (
            f"{e.actor_name} proposed policy version {_version(a)} ({a.get('title')}), "
            f"SHA-256 {str(a.get('sha256', ''))[:12]}…"
        ),
        "policy.version_approved": lambda e, b, a: (
            f"{e.actor_name} approved policy version {_version(a)}{_confirmed(a)}: tournaments "
            f"imported under {a.get('policy')} get it from now on"
        ),
        "policy.version_rejected": lambda e, b, a: (
            f"{e.actor_name} rejected policy version {_version(a)}"
        ),
        "policy.default_set": lambda e, b, a: (
            f"{e.actor_name} made {a.get('policy')} the default policy (was {b.get('policy')})"
        ),
        "tournament.policy_changed": lambda e, b, a: (
            f"{e.actor_name} put tournament {e.tournament_external_id} under policy "
            f"{a.get('policy')} (was {b.get('policy')}): a live proposal must be prepared again"
        ),
    }
)
OBJECT_LABELS.update({"policyversion": "policy version", "defaultpolicy": "default policy"})
KEY_LABELS["policy"] = "Policy"


# Outages: one failure, many tournaments. The outage's own events; each incident and proposal
# keeps its own events too.
SENTENCES.update(
    {
        "outage.recorded": lambda e, b, a: (
            f"{e.actor_name} recorded outage {e.object_id}: failed at {when(a.get('failed_at'))} "
            f"({_value('cause', a.get('cause'), '')}), {_tournaments(a)}"
        ),
        "incident.joined_outage": lambda e, b, a: (
            f"Incident {e.object_id} on tournament {e.tournament_external_id} is part of outage "
            f"{a.get('outage')}"
        ),
        "outage.tournament_added": lambda e, b, a: (
            f"{e.actor_name} added tournament {a.get('tournament')} to outage {e.object_id}"
        ),
        "outage.resumed_marked": lambda e, b, a: (
            f"{e.actor_name} marked play resumed at {when(a.get('resumed_at'))} on {_tournaments(a)} "
            f"of outage {e.object_id}: no payout for them"
        ),
        "outage.rest_not_resumable": lambda e, b, a: (
            f"{e.actor_name} declared the rest of outage {e.object_id} not resumable: "
            f"{_tournaments(a)} cancelled"
        ),
        "outage.window_passed": lambda e, b, a: (
            f"Outage {e.object_id}: play did not resume within 30 minutes, {_tournaments(a)} "
            f"cancelled (recorded by {e.actor_name})"
        ),
        "outage.site_wide_confirmed": lambda e, b, a: (
            f"{e.actor_name} confirmed that site-wide issues impaired play throughout outage "
            f"{e.object_id}: full refund for {_tournaments(a)}"
        ),
        "outage.prepare_started": lambda e, b, a: (
            f"{e.actor_name} started preparing every proposal of outage {e.object_id} "
            f"({a.get('tournaments')} tournaments)"
        ),
        "outage.prepared": lambda e, b, a: (
            f"Batch prepare of outage {e.object_id} finished: {a.get('prepared', 0)} prepared, "
            f"{a.get('unchanged', 0)} already up to date, {a.get('refused', 0)} refused, "
            f"{a.get('skipped', 0)} not cancelled"
        ),
        "outage.batch_approved": lambda e, b, a: (
            f"{e.actor_name} approved {_proposals(a)} of outage {e.object_id} at once "
            f"({_totals(a)}), outage fingerprint {str(a.get('fingerprint', ''))[:12]}…"
            f"{_confirmed(a)}"
        ),
        "outage.batch_rejected": lambda e, b, a: (
            f"{e.actor_name} rejected {_proposals(a)} of outage {e.object_id} at once "
            f"({_totals(a)})"
        ),
    }
)
