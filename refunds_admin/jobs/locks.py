"""One worker per job: a session-level PostgreSQL advisory lock, released by PostgreSQL if the
worker's process dies. Elsewhere (SQLite, development) the database serialises writers and each
job's compare-and-set claims and unique keys prevent duplicates."""

import zlib
from contextlib import contextmanager

from django.db import DatabaseError, connection

# Namespaces of the advisory locks: (namespace, id) names one lock.
POSTING = 4_0400
STATEMENTS = 4_0401
PREPARE = 4_0402
SWEEP = 4_0403  # key: a checksum of the sweep's name


@contextmanager
def advisory_lock(namespace: int, key: int):
    """Yields whether this session got the lock (never waits). Unlocking after the session was
    lost (database restarted, connection killed) is skipped: its locks went with it."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, key])
        got = cursor.fetchone()[0]
    try:
        yield got
    finally:
        if got and connection.connection is not None:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, key])
            except DatabaseError:
                pass  # the session is gone, and its locks with it


@contextmanager
def one_sweep_at_a_time(name: str):
    """Yields whether this sweep may run: a second copy of the same sweep (queued twice, or on
    two periodic workers) finds the lock held and does nothing."""
    key = zlib.crc32(name.encode()) % 2**31
    with advisory_lock(SWEEP, key) as got:
        yield got
