"""The one way tests build data: through the services the app uses (import_snapshot,
record_incident, prepare/submit/approve_proposal), so stored documents and rows always agree.

The standard tournament: 10 entries, 4 of them still active (chips 40,000 / 30,000 / 20,000 /
10,000), 3 paid places (500 / 300 / 200 USD), buy-in 30 + fee 3. Failing an hour after the start
selects "not in the money" (4 active > 3 paid places); within 20 minutes, the full refund.
"""

import json
from datetime import timedelta

from django.utils import timezone

from refunds_admin.accounts import mfa
from refunds_admin.incidents import services as incidents
from refunds_admin.proposals import services as proposals
from refunds_admin.tournaments.models import Snapshot

ACTIVE_CHIPS = [40_000, 30_000, 20_000, 10_000]


def snapshot_doc(
    external_id="T-1",
    *,
    starts_at=None,
    active_chips=None,
    eliminated=6,
    entry_fields=None,
    **extra,
):
    """The standard tournament; `entry_fields` {index: {field: value}} changes single entries
    (a hostile screen name, an id with a slash), `extra` the tournament's fields."""
    starts_at = starts_at or timezone.now() - timedelta(hours=2)
    chips = active_chips or ACTIVE_CHIPS
    entries = [
        {
            "entry_id": f"e{i + 1}",
            "player_id": f"p{i + 1}",
            "screen_name": f"player{i + 1}",
            "status": "active",
            "chips": c,
        }
        for i, c in enumerate(chips)
    ]
    entries += [
        {
            "entry_id": f"e{len(chips) + i + 1}",
            "player_id": f"p{len(chips) + i + 1}",
            "status": "eliminated",
        }
        for i in range(eliminated)
    ]
    for index, fields in (entry_fields or {}).items():
        entries[index].update(fields)
    doc = {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": external_id,
            "name": "$30 + $3 Test Special",
            "currency": "USD",
            "buy_in": "30.00",
            "fee": "3.00",
            "starts_at": starts_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "chips_in_play": sum(chips),
            "prizes": [
                {"place": 1, "amount": "500.00"},
                {"place": 2, "amount": "300.00"},
                {"place": 3, "amount": "200.00"},
            ],
        },
        "entries": entries,
    }
    doc["tournament"].update(extra)
    return doc


def dumps(doc):
    return json.dumps(doc, indent=2) + "\n"


def import_doc(user, doc=None, **kwargs):
    doc = doc or snapshot_doc(**kwargs)
    return incidents.import_snapshot(
        dumps(doc).encode(), acting_user=user, source=Snapshot.Source.UPLOAD
    )


def open_incident(user, *, failed_ago=timedelta(minutes=5), **kwargs):
    """A tournament that started 2 hours ago and failed `failed_ago` ago."""
    tournament = import_doc(user, **kwargs).tournament
    return incidents.record_incident(
        tournament,
        failed_at=timezone.now() - failed_ago,
        cause="server_crash",
        description="game server crashed",
        acting_user=user,
    )


def cancelled_incident(user, **kwargs):
    """Failed 40 minutes ago, not resumed: cancelled by the system when the window passed."""
    incident = open_incident(user, failed_ago=timedelta(minutes=40), **kwargs)
    return incidents.cancel_after_window(incident, acting_user=None)


def draft_proposal(preparer, **kwargs):
    """A draft prepared by `preparer` (support) for a cancelled incident."""
    return proposals.prepare_proposal(cancelled_incident(preparer, **kwargs), acting_user=preparer)


def submitted_proposal(preparer, **kwargs):
    return proposals.submit_proposal(draft_proposal(preparer, **kwargs), acting_user=preparer)


def approved_proposal(preparer, approver, **kwargs):
    """Approved by a second person (a manager), quoting the fingerprint; schedules posting."""
    proposal = submitted_proposal(preparer, **kwargs)
    return proposals.approve_proposal(
        proposal, acting_user=approver, fingerprint=proposal.fingerprint
    )


def enrol_device(user):
    """The user's authenticator app, enrolled as on the enrolment page: a new device confirmed
    with a real code computed from its key."""
    device = mfa.start_enrolment(user)
    return mfa.confirm_device(device, mfa.code_for(device), acting_user=user)


def totp_code(user):
    """A current code of the user's confirmed device that it has not accepted yet (what the
    app shows), computed from the device's key."""
    device = mfa.confirmed_device(user)
    device.refresh_from_db()
    return mfa.code_for(device)
