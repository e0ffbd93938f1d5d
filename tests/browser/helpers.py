"""Waiting for what a worker does in the background. Test data comes from tests.support.factories."""

import time


def wait_until_posted(proposal, timeout=60):
    """The posting job runs in a worker (REDIS_URL) or ran in-process already."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proposal.refresh_from_db()
        if proposal.status == "posted":
            return proposal
        time.sleep(0.1)
    raise AssertionError(f"proposal {proposal.pk} not posted after {timeout} s: {proposal.status}")
