"""The game platform's API: POST /api/snapshots with `Authorization: Bearer <token>`.

Token authentication (no session, so no CSRF): each ApiClient acts as a staff user whose role
the import service checks, exactly as for an upload in the browser. The routes are django-ninja
operations (assembled in api_urls.py) so that /api/schema describes them; the views still read
the raw body and answer with refunds_admin/handlers.py's error JSON (docs/api.md says why).
"""

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import JsonResponse
from ninja import Router
from ninja.security import HttpBearer

from refunds_admin.errors import Refused
from refunds_admin.handlers import api_error as _error
from refunds_admin.handlers import too_large
from refunds_admin.incidents import services as incident_services
from refunds_admin.payouts.snapshot import MAX_DOCUMENT_BYTES
from refunds_admin.tournaments.models import Snapshot
from refunds_admin.tournaments.services import authenticate_api_client

from . import api_schemas as schemas

# The refusals every operation can give, beside its own; the shapes are handlers.api_error's.
REFUSALS = {401: schemas.ApiError, 403: schemas.ApiError}


class ApiToken(HttpBearer):
    """`Authorization: Bearer <token>`: the ApiClient holding the token (request.auth)."""

    def authenticate(self, request, token):
        return authenticate_api_client(token.strip())


def unauthorized():
    return _error(
        401, "A valid API token is required.", WWW_Authenticate='Bearer realm="refunds_admin"'
    )


def _declared_length(request):
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def unframed_body(request):
    """The 411 for a body sent with Transfer-Encoding (chunked) and no Content-Length that the
    server did not de-chunk, or None. Django reads Content-Length bytes, so it would read such a
    body as empty and the refusal would be "an empty document". Under gunicorn the body arrives
    with its length (refunds_admin/wsgi.py); runserver and the test servers cannot do that."""
    if request.META.get("HTTP_TRANSFER_ENCODING") and not request.META.get("CONTENT_LENGTH"):
        return _error(
            411,
            "This server cannot read a chunked request body: send it with a Content-Length.",
            [("header.Content-Length", "is required: the body's size in bytes")],
        )
    return None


def json_body(model, description):
    """The operation's request body as the document shows it: described by `model`, read raw by
    the view (so the stored bytes and the error messages stay the engine's)."""
    return {
        "requestBody": {
            "required": True,
            "description": description,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
        }
    }


router = Router(tags=["snapshots"])


@router.post(
    "/snapshots",
    operation_id="import_snapshot",
    summary="Import a tournament snapshot",
    response={
        201: schemas.SnapshotImported,
        400: schemas.ApiError,
        **REFUSALS,
        411: schemas.ApiError,
        413: schemas.ApiError,
    },
    openapi_extra=json_body(
        schemas.TournamentSnapshot,
        "A tournament-snapshot/1 document, stored byte for byte (UTF-8, at most "
        f"{MAX_DOCUMENT_BYTES // 2**20} MB). The engine's validator is the judge: a 400 lists a "
        "problem per field, named by its path (`tournament.fee`, `entries[0] (e1).chips`).",
    ),
)
def snapshots(request):
    """Import one tournament-snapshot/1 document (the request body, stored byte for byte).
    Every answer, refusals included, is JSON."""
    client = request.auth
    if unframed := unframed_body(request):
        return unframed
    # Refused before the body is read: the declared size is enough to know.
    if _declared_length(request) > MAX_DOCUMENT_BYTES:
        return too_large()
    try:
        body = request.body
    except RequestDataTooBig:
        return too_large()
    try:
        snapshot = incident_services.import_snapshot(
            body, acting_user=client.acting_user, source=Snapshot.Source.API
        )
    except PermissionDenied as e:
        return _error(403, str(e) or "This client's user may not import snapshots.")
    except Refused as e:
        return _error(400, e.message, e.problems, total=e.total)
    tournament = snapshot.tournament
    return JsonResponse(
        {
            "tournament": {"id": tournament.pk, "external_id": tournament.external_id},
            "snapshot": {
                "version": snapshot.version,
                "sha256": snapshot.sha256,
                "entries": snapshot.entries_count,
                "active": snapshot.active_count,
            },
        },
        status=201,
    )
