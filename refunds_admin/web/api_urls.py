"""/api/: the game platform's API, one django-ninja NinjaAPI, and its OpenAPI 3.1 document at
/api/schema (token-protected like the rest; docs/openapi.json is the same document, kept in the
repository and checked against the served one by tests/web/test_api_schema.py).

django-ninja rather than DRF: the app has no serializers or viewsets to reuse, the views stay
plain functions, and pydantic models (api_schemas.py) say what each body holds (docs/api.md).
"""

import functools
import json

from django.http import HttpResponseNotAllowed
from django.urls import URLPattern, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, ValidationError

from refunds_admin.handlers import api_error
from refunds_admin.payouts.snapshot import MAX_DOCUMENT_BYTES, MAX_PROBLEMS

from . import api, api_outages, api_reads
from . import api_schemas as schemas
from .api_outages import MAX_BODY_BYTES, MAX_TOURNAMENTS

DESCRIPTION = f"""\
How the game platform imports tournament snapshots, reports outages and follows what became of
them (docs/api.md).

**Auth**: every operation, and this document, needs `Authorization: Bearer <token>` (an API
client made by `manage.py create_api_client`; it acts as a staff user whose role is checked:
support or manager to import and record, any role to read). No token, a wrong one or a switched-
off client: **401** with `WWW-Authenticate: Bearer`. A user without the role: **403**.

**Errors**: every refusal is JSON `{{"error": "...", "problems": [{{"field": "...", "message":
"..."}}]}}`, each problem naming its field path (`tournament.fee`, `entries[0] (e1).chips`,
`failed_at`, a tournament's external id), at most the first {MAX_PROBLEMS} with
`problems_total` when there were more. Nothing is half-saved: a refused request stores nothing.

**Size limits**: a snapshot body at most {MAX_DOCUMENT_BYTES // 2**20} MB (`MAX_DOCUMENT_BYTES`),
an outage body at most {MAX_BODY_BYTES // 1024} KB and {MAX_TOURNAMENTS} tournaments; a larger
body is a **413** before it is read. docs/snapshot-limits.md gives every bound of a snapshot.
"""


def _token_required(view):
    """/api/schema answers the API's clients only, like every other /api/ address."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        token = api.ApiToken()(request)
        if not token:
            return api.unauthorized()
        return view(request, *args, **kwargs)

    return wrapper


def _optional_not_null(model_schema):
    """A body field that may be left out is left out, never sent as null (the engine refuses
    `"chips": null`): pydantic writes `X | None = None` as "X or null, default null"; the
    document says "X, not required"."""
    properties = {}
    for name, prop in model_schema.get("properties", {}).items():
        options = prop.get("anyOf", [])
        if {"type": "null"} in options and prop.get("default", ...) is None:
            rest = [o for o in options if o != {"type": "null"}]
            extra = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
            prop = {**rest[0], **extra} if len(rest) == 1 else {"anyOf": rest, **extra}
        properties[name] = prop
    return {**model_schema, "properties": properties} if properties else model_schema


class RefundsApi(NinjaAPI):
    # The request bodies are read raw by the views; their models are added to the components
    # so that the operations' requestBody can refer to them.
    body_models = (schemas.TournamentSnapshot, schemas.OutageReport)

    def get_root_path(self, path_params):
        # Where refunds_admin/urls.py includes these routes (ninja would look up its root
        # view, which is left out: /api/ itself is a 404).
        return "/api/"

    def get_openapi_schema(self, **kwargs):
        schema = super().get_openapi_schema(**kwargs)
        components = schema["components"].setdefault("schemas", {})
        for model in self.body_models:
            found = model.model_json_schema(ref_template="#/components/schemas/{model}")
            for name, part in {**found.pop("$defs", {}), model.__name__: found}.items():
                components[name] = _optional_not_null(part)
        schema["components"]["schemas"] = dict(sorted(components.items()))
        return schema


ninja_api = RefundsApi(
    title="refunds_admin API",
    version="1",
    description=DESCRIPTION,
    auth=api.ApiToken(),
    openapi_url="/schema",
    docs_url=None,
    docs_decorator=_token_required,
    urls_namespace="api",
)
ninja_api.add_router("", api.router)
ninja_api.add_router("", api_outages.router)
ninja_api.add_router("", api_reads.router)


@ninja_api.exception_handler(AuthenticationError)
def _unauthorized(request, exc):
    return api.unauthorized()


@ninja_api.exception_handler(ValidationError)
def _invalid(request, exc):
    problems = [
        (".".join(str(part) for part in e.get("loc", ())), e.get("msg", "is not valid"))
        for e in exc.errors
    ]
    return api_error(400, "The request is not valid.", problems)


@ninja_api.exception_handler(Exception)
def _unexpected(request, exc):
    raise exc  # Django's handlers (refunds_admin/handlers.py) answer and log it


def _api_methods(view):
    """HEAD is served as GET without the body (RFC 9110, as Django's require_safe serves it):
    ninja serves only the methods an operation names, so a HEAD on a read was a 405, and a
    client or monitor checking that an address answers got a refusal. And ninja answers a
    method an address does not serve with a plain-text 405; ours is JSON, naming the methods it
    does serve (in Allow)."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        head = request.method == "HEAD"
        if head:
            request.method = "GET"  # for the view only: the logs and middleware see HEAD
        try:
            response = view(request, *args, **kwargs)
        finally:
            if head:
                request.method = "HEAD"
        if isinstance(response, HttpResponseNotAllowed):
            allowed = [m.strip() for m in response["Allow"].split(",")]
            if "GET" in allowed:
                allowed.append("HEAD")
            return api_error(
                405, f"Only {' or '.join(allowed)} is allowed here.", Allow=", ".join(allowed)
            )
        if head and not response.streaming:
            # The GET's headers, its length included, and no body: the servers leave a HEAD's
            # body out too (gunicorn, runserver), but not every WSGI host does.
            length = len(response.content)
            response.content = b""
            response["Content-Length"] = str(length)
        return response

    return wrapper


def _patterns():
    patterns, _, _ = ninja_api.urls
    out = []
    for pattern in patterns:
        if not isinstance(pattern, URLPattern) or pattern.name == "api-root":
            continue  # /api/ itself stays a 404, as any address the API does not serve
        view = pattern.callback
        if pattern.name == "openapi-json":
            # ninja's schema view serves GET alone but is not CSRF-exempt like the operations:
            # a POST met Django's HTML CSRF page instead of the API's JSON 405. (HEAD:
            # _api_methods serves it as GET, here as for the operations.)
            view = csrf_exempt(require_GET(view))
        pattern.callback = _api_methods(view)
        out.append(pattern)
    return out


@csrf_exempt
def _no_such_endpoint(request):
    """Any other address under /api/ (an id with a control character or an empty one, which no
    route matches, /api/ itself): the API's JSON 404, with DEBUG on too. Django's handler404
    (refunds_admin/handlers.py) gives the same answer with DEBUG off, but with DEBUG on (`make
    run`) Django answers an unmatched address with its HTML page before any handler."""
    return api_error(404, "No such API endpoint.")


def document():
    """The OpenAPI document as served and as committed (docs/openapi.json): stable JSON."""
    return json.dumps(ninja_api.get_openapi_schema(), indent=2, ensure_ascii=False) + "\n"


app_name = "api"
urlpatterns = [*_patterns(), re_path(r"^[\s\S]*", _no_such_endpoint)]
