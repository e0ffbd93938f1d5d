"""The database's clock, the one clock every process shares.

A worker whose own clock is 10 minutes fast must not stamp a heartbeat in the future (the
sweeper would ignore its dead job for 10 minutes), and one 10 minutes slow must not see its
healthy job as stale. So heartbeats, claims and stale checks use the database's time:
`now_expr()` inside an UPDATE, `db_now()` to compute a cutoff. On SQLite (development, one
machine) the database's clock is the process's own.
"""

from datetime import datetime

from django.db import connection
from django.db.models import Value
from django.db.models.functions import Now
from django.utils import timezone


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def db_now() -> datetime:
    """The database's current time (the start of this statement on PostgreSQL)."""
    if not _postgres():
        return timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        return cursor.fetchone()[0]


def now_expr():
    """The database's time as an expression for UPDATE ... SET and filters."""
    return Now() if _postgres() else Value(timezone.now())
