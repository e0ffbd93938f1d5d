"""`event_recorded`: sent by `record()` inside the transaction that writes the event.

Higher layers (notifications) derive what to tell whom from the audit trail, so the lower
layers that write the events (proposals, ledger, incidents) never import them. A receiver must
not write anything here (the transaction may still roll back): it only registers what to do
once it commits (`transaction.on_commit`). The signal says "look after commit"; the receiver
must not rely on it alone (a crash right after commit loses the hook), so the same work is
also swept periodically.
"""

from django.dispatch import Signal

# Sent with `event` (the AuditEvent just written), inside its transaction.
event_recorded = Signal()
