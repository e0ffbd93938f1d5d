from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from django.db import models, transaction

from . import chain, context
from .models import AuditEvent
from .signals import event_recorded

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


class _Tournament(Protocol):
    external_id: str


def record(
    action: str,
    obj: models.Model,
    *,
    actor: User | AnonymousUser | None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
    tournament: _Tournament | str | None = None,
    player_ids: Iterable[str] | None = None,
) -> AuditEvent:
    """Write the audit event for a state change. Must run inside the change's own transaction.

    `actor` is a user, or None for the system. `tournament` is the Tournament (or its external
    id) the change concerns, so that the history can be searched by tournament.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(f"audit event {action} written outside a transaction")
    ctx = context.current.get()
    if tournament is not None and not isinstance(tournament, str):
        tournament = tournament.external_id
    event = AuditEvent(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=actor.get_username()
        if actor is not None and actor.is_authenticated
        else "system",
        action=action,
        object_type=obj._meta.model_name or type(obj).__name__.lower(),
        object_id=str(obj.pk),
        tournament_external_id=tournament or "",
        player_ids=list(player_ids or []),
        before=before,
        after=after,
        reason=reason or "",
        request_id=ctx.request_id,
        ip=ctx.ip,
    )
    chain.link(event)  # the hash of the event before it, and its own (tamper-evident)
    event.save(force_insert=True)
    event_recorded.send(sender=AuditEvent, event=event)
    return event
