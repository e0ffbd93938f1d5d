"""`event_committed`: sent once an audit event's transaction has committed.

Higher layers (notifications) derive what to tell whom from the audit trail, so the lower
layers that write the events (proposals, ledger, incidents) never import them. The signal only
says "look now"; the receiver must not rely on it alone (a crash right after commit loses it),
so the same work is also swept periodically.
"""

from django.dispatch import Signal

# Sent with event_id and action, after commit.
event_committed = Signal()
