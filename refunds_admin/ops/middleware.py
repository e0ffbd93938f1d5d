import logging
import time

from django.conf import settings
from django.http import JsonResponse
from django.utils.functional import empty

from refunds_admin.audit import context as audit_context

from . import health, logs

request_log = logging.getLogger("refunds_admin.request")

HEALTH_PATH = "/healthz"

# URL segment -> the log field its <pk> is the id of ("proposals/<int:pk>/..." -> proposal_id).
_PK_FIELDS = {
    "proposals": "proposal_id",
    "incidents": "incident_id",
    "tournaments": "tournament_id",
    "outages": "outage_id",
}
_ID_KWARGS = {"proposal_id", "incident_id", "tournament_id", "outage_id"}


class ClientAddressMiddleware:
    """Behind the operator's proxies, REMOTE_ADDR is the nearest proxy's address, so the sign-in
    lockout, the logs and the audit would see every staff member as one address. With
    TRUSTED_PROXY_COUNT = N, the client is the address the outermost of our N proxies saw: the
    Nth entry from the right of X-Forwarded-For. Entries further left are whatever the client
    sent and are never trusted. With N = 0 (the default, no proxy) nothing changes."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        proxies = settings.TRUSTED_PROXY_COUNT
        if proxies:
            hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
            hops = [h for h in hops if h]
            if hops:
                # Fewer hops than proxies: the request came through fewer of them; the leftmost
                # one any of our proxies added is still the client.
                request.META["REMOTE_ADDR"] = hops[-min(proxies, len(hops))]
        return self.get_response(request)


class HealthCheckMiddleware:
    """GET /healthz for load balancers: no login, no host check, no HTTPS redirect, JSON that
    names the state of the database, the broker and the heartbeats and nothing else."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.rstrip("/") != HEALTH_PATH:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return JsonResponse({"status": "method not allowed"}, status=405)
        status, body = health.report()
        response = JsonResponse(body, status=status)
        response["Cache-Control"] = "no-store"
        return response


class RequestLogMiddleware:
    """Binds the request's log context (request id, user, the objects the URL names) and, with
    LOG_REQUESTS (on with LOG_FORMAT=json), writes one line per request when it ends."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.enabled = getattr(settings, "LOG_REQUESTS", False)

    def __call__(self, request):
        token = logs.bind(request_id=audit_context.current.get().request_id or None)
        started = time.monotonic()
        try:
            response = self.get_response(request)
            if self.enabled:
                logs.update(user_id=_user_id(request))
                request_log.info(
                    "%s %s %s",
                    request.method,
                    request.path,
                    response.status_code,
                    extra={
                        "method": request.method,
                        "path": request.path,
                        "status": response.status_code,
                        "duration_ms": round((time.monotonic() - started) * 1000, 1),
                    },
                )
            return response
        finally:
            logs.unbind(token)

    def process_view(self, request, view_func, view_args, view_kwargs):
        fields = {key: value for key, value in view_kwargs.items() if key in _ID_KWARGS}
        match = request.resolver_match
        if match is not None and "pk" in view_kwargs:
            field = _PK_FIELDS.get(match.route.split("/", 1)[0])
            if field:
                fields.setdefault(field, view_kwargs["pk"])
        # Only look the user up for a request with a session: an anonymous probe costs nothing.
        if settings.SESSION_COOKIE_NAME in request.COOKIES:
            fields["user_id"] = _user_id(request)
        logs.update(**fields)


def _user_id(request):
    """The signed-in user's id; an anonymous request (no session cookie) costs no query."""
    user = request.__dict__.get("user")
    if user is None:
        return None
    if (
        getattr(user, "_wrapped", None) is empty
        and settings.SESSION_COOKIE_NAME not in request.COOKIES
    ):
        return None
    try:
        return user.pk if user.is_authenticated else None
    except Exception:  # a database that went away mid-request: log without the user
        return None
