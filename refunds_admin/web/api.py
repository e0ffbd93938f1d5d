"""The game platform's API: POST /api/snapshots with `Authorization: Bearer <token>`.

Token authentication (no session, so no CSRF): each ApiClient acts as a staff user whose role
the import service checks, exactly as for an upload in the browser.
"""

from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from refunds_admin.errors import Refused
from refunds_admin.incidents import services as incident_services
from refunds_admin.tournaments.models import Snapshot
from refunds_admin.tournaments.services import authenticate_api_client


def _error(status, message, problems=(), **headers):
    body = {
        "error": message,
        "problems": [{"field": where, "message": what} for where, what in problems],
    }
    response = JsonResponse(body, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _bearer_token(request):
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


@csrf_exempt
@require_POST
def snapshots(request):
    """Import one tournament-snapshot/1 document (the request body, stored byte for byte)."""
    client = authenticate_api_client(_bearer_token(request))
    if client is None:
        return _error(
            401, "A valid API token is required.", WWW_Authenticate='Bearer realm="refunds_admin"'
        )
    try:
        snapshot = incident_services.import_snapshot(
            request.body, acting_user=client.acting_user, source=Snapshot.Source.API
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
