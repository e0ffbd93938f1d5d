"""The request an audit event was caused by (request id, IP), carried in a context variable."""

import contextvars
from dataclasses import dataclass


@dataclass(frozen=True)
class RequestContext:
    request_id: str = ""
    ip: str | None = None


current = contextvars.ContextVar("audit_request_context", default=RequestContext())  # noqa: B039 (frozen)
