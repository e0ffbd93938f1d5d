"""Driving a posting job the way a worker would, for tests of what follows from it."""

import pytest

from refunds_admin.ledger import posting


def fail_past_the_unavailable_budget(proposal_id, capture_on_commit_callbacks):
    """With the wallet down and POSTING_UNAVAILABLE_BUDGET at 0: the first run waits, the second
    finds the budget spent and fails the job; what that failure queues after commit is run."""
    with pytest.raises(posting.PostingDelayed):
        posting.post_proposal(proposal_id)
    with capture_on_commit_callbacks(execute=True), pytest.raises(posting.PostingStopped):
        posting.post_proposal(proposal_id)
