import re
import uuid

from . import context

# An incoming X-Request-ID (from the operator's proxy) is kept when it looks like an id: letters,
# digits and - _ . : only, at most 64 characters. Anything else (spaces, quotes, newlines that
# could forge log lines) is replaced by a fresh id.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,64}")


def request_id_from(headers):
    incoming = headers.get("X-Request-ID", "")
    if _SANE_REQUEST_ID.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


class RequestContextMiddleware:
    """Gives every request an id (or keeps a sane incoming X-Request-ID), returns it as
    X-Request-ID and remembers it and the IP for audit events and log lines."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        ctx = context.RequestContext(
            request_id=request_id_from(request.headers),
            ip=request.META.get("REMOTE_ADDR"),
            # This middleware runs before authentication: the user is read from the request
            # when an event needs it (audit/access.py).
            request=request,
        )
        token = context.current.set(ctx)
        try:
            response = self.get_response(request)
        finally:
            context.current.reset(token)
        response["X-Request-ID"] = ctx.request_id
        return response
