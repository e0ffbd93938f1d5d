import uuid

from . import context


class RequestContextMiddleware:
    """Gives every request an id (or takes X-Request-ID) and remembers its IP for audit events."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request.headers.get("X-Request-ID") or uuid.uuid4().hex
        ctx = context.RequestContext(
            request_id=request_id[:64],
            ip=request.META.get("REMOTE_ADDR"),
            user=getattr(request, "user", None),
        )
        token = context.current.set(ctx)
        try:
            response = self.get_response(request)
        finally:
            context.current.reset(token)
        response["X-Request-ID"] = ctx.request_id
        return response
