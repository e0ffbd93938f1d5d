"""Posting approved proposals. Owned by the posting issue (#4); approve_proposal calls
schedule_posting() inside its own transaction (the transactional outbox)."""


def schedule_posting(proposal, *, actor):
    """Record, in the caller's transaction, that this approved proposal must be posted."""
    raise NotImplementedError("posting lands with issue #4")
