"""Operator logs: plain text by default, one JSON object per line with LOG_FORMAT=json.

Every line carries what is known about the work it belongs to: the request id (also the
X-Request-ID response header and the audit events' request id), the signed-in user's id and
the proposal/incident/tournament the URL names; in a Celery worker, the task and the proposal
it works on, and the id of the request that queued it (refunds_admin/celery.py). Nothing secret
reaches a line: passwords, tokens, cookies, Authorization headers
and password-reset links are masked in every message, traceback and field (`redact`).
"""

import contextvars
import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

# What the current request or task is about; a fresh dict per request/task (bind/unbind).
_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "ops_log_context",
    default=None,
)


def bind(**fields):
    """Start a context (a request, a task); returns the token for `unbind`."""
    return _context.set({k: v for k, v in fields.items() if v is not None})


def update(**fields):
    ctx = _context.get()
    if ctx is not None:
        ctx.update({k: v for k, v in fields.items() if v is not None})


def unbind(token):
    _context.reset(token)


def current():
    return dict(_context.get() or {})


MASK = "[redacted]"
# Keys whose values are secrets wherever they appear: query strings, form bodies, JSON, headers
# as text, repr() of dicts.
_SECRET_KEYS = (
    r"password\d?|passwd|old_password|new_password\d|secret(?:_key)?|token|access_token|"
    r"refresh_token|api_key|apikey|csrfmiddlewaretoken|csrftoken|sessionid|session|"
    r"cashier_token|authorization|cookie|x-csrftoken"
)
_PATTERNS = [
    # Authorization: Bearer abc / Token abc / Basic abc
    (re.compile(r"(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{6,}"), r"\1 " + MASK),
    # key=value (query strings, form bodies, cookies, headers written as text)
    (re.compile(rf"(?i)\b({_SECRET_KEYS})(=)[^&\s;,'\"]*"), r"\1\2" + MASK),
    # 'key': 'value' / "key": "value" (dict reprs and JSON)
    (
        re.compile(rf"(?i)(['\"](?:{_SECRET_KEYS})['\"]\s*:\s*)(['\"])(?:(?!\2).)*\2"),
        r"\1\2" + MASK + r"\2",
    ),
    # key: value (header lines)
    (
        re.compile(r"(?i)\b(authorization|cookie|set-cookie|x-csrftoken)(:\s*)[^\r\n]+"),
        r"\1\2" + MASK,
    ),
    # Django's password-reset links: /reset/<uidb64>/<token>/
    (re.compile(r"(/reset/)[^/\s]+/[^/\s?\"']+"), r"\1" + MASK),
]


def redact(text):
    if not isinstance(text, str) or not text:
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


_SECRET_FIELD = re.compile(rf"(?i)^(?:{_SECRET_KEYS})$|password|token|secret|cookie|authorization")

# Attributes every LogRecord has: not "extra" fields.
_RECORD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    # Django attaches the request (headers, cookies, body) to "django.request" records.
    "request",
    "response",
    "server_time",
    "status_code",
}

# gunicorn's access records carry the request's atoms as args: these become fields.
_ACCESS_ATOMS = {
    "m": "method",
    "U": "path",
    "s": "status",
    "B": "bytes",
    "M": "duration_ms",
    "h": "remote_addr",
    "a": "user_agent",
    "{x-request-id}o": "request_id",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the context, simple extras."""

    def format(self, record):
        entry = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(current())
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            for atom, field in _ACCESS_ATOMS.items():
                value = record.args.get(atom)
                if value not in (None, "-", ""):
                    entry[field] = int(value) if field == "status" else value
        for key, value in vars(record).items():
            if key in _RECORD_ATTRS or key.startswith("_") or _SECRET_FIELD.search(key):
                continue
            if isinstance(value, str | int | float | bool) or value is None:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        clean = {k: redact(v) if isinstance(v, str) else v for k, v in entry.items()}
        return json.dumps(clean, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """The plain format, with the request id when there is one, and the same masking."""

    def __init__(self, fmt="%(asctime)s %(levelname)s %(name)s%(ctx)s %(message)s", **kwargs):
        super().__init__(fmt, **kwargs)

    def format(self, record):
        ctx = current()
        record.ctx = f" [{ctx['request_id'][:12]}]" if ctx.get("request_id") else ""
        return redact(super().format(record))


def gunicorn_logconfig(log_format, level="INFO"):
    """gunicorn's logconfig_dict: its error and access logs in the app's format."""
    formatter = "refunds_admin.ops.logs.JsonFormatter" if log_format == "json" else None
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "app": {"()": formatter or "refunds_admin.ops.logs.TextFormatter"},
            # In text, gunicorn's access line keeps its own layout and time stamp.
            "access": {"()": formatter}
            if formatter
            else {"()": "refunds_admin.ops.logs.TextFormatter", "fmt": "%(message)s"},
        },
        "handlers": {
            "error": {
                "class": "logging.StreamHandler",
                "formatter": "app",
                "stream": "ext://sys.stderr",
            },
            "access": {
                "class": "logging.StreamHandler",
                "formatter": "access",
                "stream": "ext://sys.stdout",
            },
        },
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["error"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["access"], "propagate": False},
        },
        "root": {"level": level, "handlers": []},
    }
