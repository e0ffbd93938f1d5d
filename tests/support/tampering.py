"""What someone with direct access to the database could do behind the app's back.

On PostgreSQL the append-only and immutability triggers refuse such changes even then; a
superuser can still switch triggers off for a session (`session_replication_role = replica`).
Tests that check the app's *second* line of defence (posting's fingerprint check, the
auditor's replay) change rows that way.
"""

from contextlib import contextmanager

from django.db import connection


@contextmanager
def triggers_off():
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET session_replication_role = DEFAULT")
