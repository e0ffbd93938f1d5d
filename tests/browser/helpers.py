"""Set a tournament up to a given step through the real services (fast, no browser)."""

import time
from datetime import timedelta

from django.utils import timezone

from refunds_admin.incidents import services as incidents
from refunds_admin.ledger import services as ledger
from refunds_admin.proposals import services as proposals
from refunds_admin.tournaments import services as tournaments

from .conftest import snapshot_file


def submitted_proposal(user, tmp_path, *, external_id):
    snapshot = tournaments.import_snapshot(
        snapshot_file(tmp_path, external_id=external_id).read_bytes(),
        acting_user=user,
        source="upload",
    )
    incident = incidents.record_incident(
        snapshot.tournament,
        failed_at=timezone.now().replace(microsecond=0) - timedelta(minutes=40),
        cause="network",
        description="Data centre uplink lost.",
        acting_user=user,
    )
    incidents.cancel_after_window(incident, acting_user=user)
    proposal = proposals.prepare_proposal(incident, acting_user=user)
    proposals.submit_proposal(proposal, acting_user=user)
    proposal.refresh_from_db()
    return proposal


def approved_proposal(preparer, approver, tmp_path, *, external_id):
    proposal = submitted_proposal(preparer, tmp_path, external_id=external_id)
    proposals.approve_proposal(proposal, acting_user=approver, fingerprint=proposal.fingerprint)
    proposal.refresh_from_db()
    return proposal


def open_incident(user, tmp_path, *, external_id, minutes_ago):
    """An incident still inside its 30-minute window: the dashboard counts down to its deadline."""
    snapshot = tournaments.import_snapshot(
        snapshot_file(tmp_path, external_id=external_id).read_bytes(),
        acting_user=user,
        source="upload",
    )
    return incidents.record_incident(
        snapshot.tournament,
        failed_at=timezone.now().replace(microsecond=0) - timedelta(minutes=minutes_ago),
        cause="server_crash",
        description="Table servers unreachable; restarting.",
        acting_user=user,
    )


def partly_posted_proposal(preparer, approver, tmp_path, *, external_id, chunks=1):
    """An approved proposal whose posting job booked its first chunk(s) and stopped there, as a
    worker does between chunks (the job stays running; a worker finishes it later)."""
    proposal = approved_proposal(preparer, approver, tmp_path, external_id=external_id)
    ledger.post_proposal(proposal.pk, max_chunks=chunks)
    proposal.refresh_from_db()
    return proposal


def wait_until_posted(proposal, timeout=60):
    """The posting job runs in a worker (REDIS_URL) or ran in-process already."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proposal.refresh_from_db()
        if proposal.status == "posted":
            return proposal
        time.sleep(0.1)
    raise AssertionError(f"proposal {proposal.pk} not posted after {timeout} s: {proposal.status}")
