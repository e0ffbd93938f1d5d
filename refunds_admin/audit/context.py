"""The request an audit event was caused by (request id, IP), carried in a context variable."""

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class RequestContext:
    request_id: str = ""
    ip: str | None = None
    # The request's user (Django's lazy object), for changes made outside our services: the
    # admin editing users and roles (audit/signals.py).
    user: object = None


current = contextvars.ContextVar("audit_request_context", default=RequestContext())  # noqa: B039 (frozen)


@contextmanager
def acting(user):
    """Changes audited by signals inside this block name `user` as the actor (a service called
    with an explicit acting_user, outside a request or on someone's behalf)."""
    token = current.set(replace(current.get(), user=user))
    try:
        yield
    finally:
        current.reset(token)
