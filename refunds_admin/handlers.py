"""Error pages: HTML for people, JSON under /api/ (the game platform reads `error`, never a page).

Django answers a body larger than DATA_UPLOAD_MAX_MEMORY_SIZE with a 400 (RequestDataTooBig is
a SuspiciousOperation); under /api/ that is a 413 with the limit in the message.
"""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.views import defaults


def _api(request):
    return request.path.startswith("/api/")


# An error lists at most this many problems, and says how many there were: a refusal of a
# request with millions of bad items stays small.
MAX_PROBLEMS = 50


def api_error(status, message, problems=(), *, total=None, **headers):
    """The API's error body. `total`: how many problems there were in all, when the check
    counted more than it listed (Refused.total); by default the number given."""
    problems = list(problems)
    body = {
        "error": message,
        "problems": [{"field": where, "message": what} for where, what in problems[:MAX_PROBLEMS]],
    }
    total = max(total or 0, len(problems))
    if total > MAX_PROBLEMS:
        body["problems_total"] = total
    response = JsonResponse(body, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def body_too_large(limit, field, where_told):
    """The API's 413: the body's limit in the message, the body itself (`field`) as the problem,
    pointing to the page that states the limits. One wording for every operation."""
    size = f"{limit // 2**20} MB" if limit >= 2**20 else f"{limit:,} bytes"
    return api_error(
        413, f"The request body is larger than the {size} this API accepts.", [(field, where_told)]
    )


def too_large():
    # The snapshot document's limit, as docs/api.md states it (Django's own limit on a request,
    # DATA_UPLOAD_MAX_MEMORY_SIZE, is 1 MB above it: room for a form's other fields), or
    # Django's where a deployment set it lower.
    from refunds_admin.payouts.snapshot import MAX_DOCUMENT_BYTES

    limit = min(MAX_DOCUMENT_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    return body_too_large(
        limit, "document", "see docs/snapshot-limits.md for the limits of a snapshot"
    )


def bad_request(request, exception):
    if _api(request):
        if isinstance(exception, RequestDataTooBig):
            return too_large()
        return api_error(400, "Bad request.")
    return defaults.bad_request(request, exception)


def permission_denied(request, exception):
    if _api(request):
        return api_error(403, str(exception) or "Forbidden.")
    return defaults.permission_denied(request, exception)


def page_not_found(request, exception):
    if _api(request):
        return api_error(404, "No such API endpoint.")
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _api(request):
        return api_error(500, "Internal error; nothing was imported. The operators were told.")
    return defaults.server_error(request)
