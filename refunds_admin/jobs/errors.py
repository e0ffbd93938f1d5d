"""What a database error means for a job, read from its SQLSTATE (PostgreSQL's error code).

- UNAVAILABLE: the database cannot be reached or is going down (connection failures, class 08;
  admin/crash shutdown, cannot connect now, 57P0x). Not the job's fault: it waits, with backoff,
  without using up an attempt.
- RETRY: the database chose this transaction to lose a race (serialization failure 40001,
  deadlock 40P01). Running it again at once succeeds; a few times at most.
- FAIL: anything else -- a statement timeout (57014), a full disk (53100), a constraint -- will
  not go away by waiting: the attempt fails with the real reason, for a human to read.
"""

import enum

from django.db import DatabaseError, InterfaceError, OperationalError


class Kind(enum.StrEnum):
    UNAVAILABLE = "unavailable"
    RETRY = "retry"
    FAIL = "fail"


# The SQLSTATEs a job meets, in the words the posting page uses.
NAMES = {
    "08000": "connection exception",
    "08003": "connection does not exist",
    "08006": "connection failure",
    "08001": "cannot connect",
    "08004": "connection rejected",
    "57P01": "the database was shut down by its administrator",
    "57P02": "the database crashed",
    "57P03": "the database cannot accept connections yet",
    "40001": "serialization failure",
    "40P01": "deadlock",
    "57014": "statement timeout",
    "53100": "disk full",
    "53200": "out of memory",
    "53300": "too many connections",
    "55P03": "lock not available",
    "23505": "unique violation",
    "23514": "check violation",
}
_UNAVAILABLE = {"57P01", "57P02", "57P03", "53300"}
_RETRY = {"40001", "40P01"}
# How many times in a row a transaction lost to a race is run again at once.
RACE_RETRIES = 3


def sqlstate(exc: BaseException | None) -> str | None:
    """The SQLSTATE of a database error (Django wraps the driver's error as its cause)."""
    seen = 0
    while exc is not None and seen < 5:
        code = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
        if code:
            return code
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def classify(exc: BaseException) -> Kind | None:
    """UNAVAILABLE, RETRY or FAIL for a database error; None for any other exception."""
    if not isinstance(exc, DatabaseError):
        return None
    code = sqlstate(exc)
    if code is None:
        # No code: the driver lost the connection itself (refused, closed, reset).
        return (
            Kind.UNAVAILABLE if isinstance(exc, (OperationalError, InterfaceError)) else Kind.FAIL
        )
    if code.startswith("08") or code in _UNAVAILABLE:
        return Kind.UNAVAILABLE
    if code in _RETRY:
        return Kind.RETRY
    return Kind.FAIL


def describe(exc: BaseException) -> str:
    """One line naming the cause: "statement timeout (SQLSTATE 57014): canceling statement ..."."""
    code = sqlstate(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if code is None:
        return f"{type(exc).__name__}: {text}"
    return f"{NAMES.get(code, 'database error')} (SQLSTATE {code}): {text}"


def backoff(retries: int, *, base: float, cap: float) -> float:
    """Seconds before the next try after `retries` tries stopped by the same outage: `base`
    doubled each time, capped at `cap`."""
    return min(cap, base * 2 ** max(0, retries - 1))
