"""Until the posting issue (#4) is merged, `ledger.services.schedule_posting` is a placeholder
that raises NotImplementedError. Approval tests call `record_scheduled_postings` from a fixture to record the call instead; as
soon as the real function is in, it steps aside and the real one runs."""

import inspect

from django.db import connection

from refunds_admin.ledger import services as ledger


def _is_placeholder():
    return "NotImplementedError" in inspect.getsource(ledger.schedule_posting)


def record_scheduled_postings(monkeypatch):
    calls = []
    if _is_placeholder():

        def record_call(proposal, *, actor):
            # It must be called inside the approval's transaction (the transactional outbox).
            calls.append((proposal.pk, proposal.status, actor, connection.in_atomic_block))

        monkeypatch.setattr(ledger, "schedule_posting", record_call)
    return calls
