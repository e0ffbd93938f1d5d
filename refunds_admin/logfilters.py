"""Logging filters for operators' logs."""

import logging


class NoTracebackBelow500(logging.Filter):
    """A refused request (403, 400, 404) is one line in the log, not a traceback: the traceback
    of PermissionDenied says nothing an operator needs, and every forbidden click would bury
    the real errors. Server errors (5xx) keep their traceback."""

    def filter(self, record):
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
