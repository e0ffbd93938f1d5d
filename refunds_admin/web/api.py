"""The game platform's API: POST /api/snapshots with `Authorization: Bearer <token>`.

Token authentication (no session, so no CSRF): each ApiClient acts as a staff user whose role
the import service checks, exactly as for an upload in the browser.
"""

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from refunds_admin.errors import Refused
from refunds_admin.handlers import api_error as _error
from refunds_admin.handlers import too_large
from refunds_admin.incidents import services as incident_services
from refunds_admin.payouts.snapshot import MAX_DOCUMENT_BYTES
from refunds_admin.tournaments.models import Snapshot
from refunds_admin.tournaments.services import authenticate_api_client


def _bearer_token(request):
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _declared_length(request):
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


@csrf_exempt
def snapshots(request):
    """Import one tournament-snapshot/1 document (the request body, stored byte for byte).
    Every answer, refusals included, is JSON."""
    if request.method != "POST":
        return _error(405, "Only POST is allowed here.", Allow="POST")
    client = authenticate_api_client(_bearer_token(request))
    if client is None:
        return _error(
            401, "A valid API token is required.", WWW_Authenticate='Bearer realm="refunds_admin"'
        )
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
        return _error(400, e.message, e.problems)
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
