"""The request an audit event was caused by (request id, IP), carried in a context variable."""

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class RequestContext:
    request_id: str = ""
    ip: str | None = None
    # The request itself, whose user (set later by the authentication middleware) is the actor of
    # changes made outside our services: the admin editing users and roles (audit/access.py).
    request: object = None
    # Set by `acting()`: the actor for a service called on someone's behalf, outside a request.
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
