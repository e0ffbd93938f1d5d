"""The WSGI application gunicorn serves (gunicorn.conf.py, `make serve`).

Django's handler plus one thing it lacks: a request body sent with `Transfer-Encoding: chunked`
(no Content-Length). Django reads Content-Length bytes of a body, so such a body was read as
empty and the API refused "an empty document". gunicorn de-chunks the body and says so with
`wsgi.input_terminated` (the stream ends where the body ends); the handler then reads it, up to
DATA_UPLOAD_MAX_MEMORY_SIZE (Django's limit on any request body, and so the API's), and hands it
to Django as a body with a Content-Length, whose limits then apply as to any other body. A
server that does not de-chunk (runserver) sets no `wsgi.input_terminated`: the API answers 411
(web/api.py), naming Content-Length.
"""

import io
import os

import django
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpResponse

# Read in pieces: the de-chunking server hands over what it has; no single huge read.
_PIECE = 64 * 1024


def _too_large(path, limit):
    """The body went past `limit`: the API's JSON 413, a plain one elsewhere. Answered here,
    before Django: the app never reads the rest of the body (gunicorn discards it)."""
    if path.startswith("/api/"):
        from refunds_admin.handlers import body_too_large

        return body_too_large(limit, "body", "see docs/api.md (size limits) for the limits")
    return HttpResponse(
        "The request body is too large.\n", status=413, content_type="text/plain; charset=utf-8"
    )


def read_terminated_body(environ):
    """For a chunked body that the server de-chunked (`wsgi.input_terminated`): read it and
    give Django a body with a Content-Length. None when Django may go on; the 413 response when
    the body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE."""
    if environ.get("CONTENT_LENGTH") or not environ.get("HTTP_TRANSFER_ENCODING"):
        return None  # a body with its length (or none): Django reads it as ever
    if not environ.get("wsgi.input_terminated"):
        return None  # the server cannot end the body for us: the API answers 411
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is None:  # no limit set for Django: still none past the API's largest body
        from refunds_admin.payouts.snapshot import MAX_DOCUMENT_BYTES

        limit = MAX_DOCUMENT_BYTES
    stream, pieces, size = environ["wsgi.input"], [], 0
    while size <= limit:
        piece = stream.read(min(_PIECE, limit + 1 - size))
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    if size > limit:
        return _too_large(environ.get("PATH_INFO", ""), limit)
    # Now it is a body of known length, as a de-chunking proxy would have sent it: without the
    # Transfer-Encoding, which would contradict the Content-Length.
    environ["wsgi.input"] = io.BytesIO(b"".join(pieces))
    environ["CONTENT_LENGTH"] = str(size)
    del environ["HTTP_TRANSFER_ENCODING"]
    return None


class RefundsWSGIHandler(WSGIHandler):
    def __call__(self, environ, start_response):
        refused = read_terminated_body(environ)
        if refused is not None:
            # As WSGIHandler answers (without the middleware: nothing of the app has run).
            start_response(f"{refused.status_code} {refused.reason_phrase}", list(refused.items()))
            return [refused.content]
        return super().__call__(environ, start_response)


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
django.setup(set_prefix=False)  # what get_wsgi_application() does before making its handler
application = RefundsWSGIHandler()
