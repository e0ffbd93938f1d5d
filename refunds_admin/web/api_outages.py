"""POST /api/outages: the game platform reports one failure across many tournaments.

The same token scheme as POST /api/snapshots (`Authorization: Bearer <token>`, an ApiClient
acting as a staff user whose role the service checks). All or nothing: a 4xx lists a problem per
unknown or snapshot-less tournament (and per bad field), and nothing is recorded.
"""

import json
import re

from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from ninja import Router

from refunds_admin.accounts.roles import CAN_PREPARE, has_role
from refunds_admin.errors import Conflict, Refused
from refunds_admin.handlers import body_too_large
from refunds_admin.incidents.models import Incident
from refunds_admin.outages import services as outage_services
from refunds_admin.payouts.money import json_type
from refunds_admin.payouts.snapshot import parse_timestamp

from . import api_schemas as schemas
from .api import REFUSALS, _declared_length, _error, json_body, unframed_body
from .api_schemas import MAX_TOURNAMENTS

FIELDS = ("failed_at", "cause", "description", "external_ids")
# 5000 ids of up to 128 characters and the other fields fit in 1 MB: a larger body is refused
# before it is read.
MAX_BODY_BYTES = 1024 * 1024


# What PostgreSQL cannot store in a text column (the web form refuses NUL the same way).
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
_MISSING = object()
TIMESTAMP = "an ISO 8601 date-time string with an offset, like 2026-11-29T21:14:00Z"


def _parse(body):
    """(fields, problems) from the request body."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, [("body", f"is not JSON: {exc}")]
    except RecursionError:
        return None, [("body", "is nested too deeply")]
    if not isinstance(data, dict):
        return None, [("body", "must be a JSON object")]
    problems = [(k, "is not a field of an outage") for k in data if k not in FIELDS]
    failed_at = None
    raw = data.get("failed_at", _MISSING)
    if raw is _MISSING:
        problems.append(("failed_at", f"is required: {TIMESTAMP}"))
    else:
        # The engine's reading of a snapshot's times: one ISO 8601 for the whole API. A number,
        # a list or an object says what is expected, not that the field is missing.
        try:
            failed_at = parse_timestamp(raw).at
        except ValueError as exc:
            problems.append(("failed_at", str(exc)))
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append(("description", f"must be a string, not a JSON {json_type(description)}"))
    elif _UNSTORABLE.search(description):
        problems.append(("description", "may not contain NUL characters or lone surrogates"))
    causes = ", ".join(Incident.Cause.values)
    cause = data.get("cause", _MISSING)
    if cause is _MISSING:
        problems.append(("cause", f"is required: one of {causes}"))
    elif not isinstance(cause, str):
        problems.append(("cause", f"must be one of {causes}, not a JSON {json_type(cause)}"))
    elif cause not in Incident.Cause.values:
        problems.append(("cause", f"{cause[:40]!r} is not one of {causes}"))
    ids = data.get("external_ids")
    if isinstance(ids, list) and len(ids) > MAX_TOURNAMENTS:
        # Refused as a whole: its ids are not looked up one by one.
        many = f"lists {len(ids):,} tournaments; at most {MAX_TOURNAMENTS} per outage"
        return None, [("external_ids", many)]
    fields = {
        "failed_at": failed_at,
        "cause": cause if isinstance(cause, str) else None,
        "description": description if isinstance(description, str) else "",
        "external_ids": ids,
    }
    return fields, problems


def _too_large():
    return body_too_large(
        MAX_BODY_BYTES, "body", "see docs/api.md (size limits) for the limits of an outage"
    )


router = Router(tags=["outages"])


@router.post(
    "/outages",
    operation_id="record_outage",
    summary="Record an outage across many tournaments",
    response={
        200: schemas.OutageRecorded,
        201: schemas.OutageRecorded,
        400: schemas.ApiError,
        **REFUSALS,
        409: schemas.ApiError,
        411: schemas.ApiError,
        413: schemas.ApiError,
    },
    openapi_extra=json_body(
        schemas.OutageReport,
        f"At most {MAX_TOURNAMENTS} tournaments and {MAX_BODY_BYTES // 2**20} MB. A 400 names "
        "each bad field and each unknown or snapshot-less tournament by its external id.",
    ),
)
def outages(request):
    """Record an outage: one failure across the listed tournaments, all or nothing. A 400 lists
    a problem per unknown or snapshot-less tournament (by its external id) and per bad field.
    The same call again (a retry) answers 200 with the outage already recorded; the same
    failure time, cause and tournaments with another description, a 409 naming `description`
    (nothing is changed)."""
    # Who (the token, checked before this runs), may they, and how much: all before any work
    # on the body.
    client = request.auth
    if not has_role(client.acting_user, CAN_PREPARE):
        return _error(403, f"{client.acting_user.get_username()} may not record outages.")
    if unframed := unframed_body(request):
        return unframed
    if _declared_length(request) > MAX_BODY_BYTES:
        return _too_large()
    body = request.read(MAX_BODY_BYTES + 1)  # (a body without a declared length, too)
    if len(body) > MAX_BODY_BYTES:
        return _too_large()
    fields, problems = _parse(body)
    refused = "The outage was refused; nothing was recorded."
    if fields is None:
        return _error(400, refused, problems)
    try:
        if problems:
            # Malformed fields: still name every unknown tournament, so one answer lists all.
            _, unknown = outage_services.resolve_external_ids(fields["external_ids"])
            raise Refused(refused, problems=problems + unknown)
        outage, created = outage_services.record_outage_for_external_ids(
            acting_user=client.acting_user, **fields
        )
    except PermissionDenied as e:
        return _error(403, str(e) or "This client's user may not record outages.")
    except Conflict as e:
        return _error(409, e.message, e.problems)
    except Refused as e:
        return _error(400, e.message, e.problems)
    members = outage_services.incidents_of(outage)
    return JsonResponse(
        {
            "id": outage.pk,
            "failed_at": outage.failed_at.isoformat(),
            "cause": outage.cause,
            "deadline": outage.deadline.isoformat(),
            "incidents": [
                {"id": i.pk, "external_id": i.tournament.external_id, "rule": i.rule}
                for i in members
            ],
        },
        status=201 if created else 200,
    )
