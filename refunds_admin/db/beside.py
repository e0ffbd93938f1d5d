"""Reading rows while Python computes (PostgreSQL): the database and the interpreter at once.

Preparing a proposal again reads the previous version's 100k lines for "What changed" while the
engine computes the new one, instead of one after the other (docs/performance.md, "Issue 25:
prepare, Python and PostgreSQL at once").
"""

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import connection

_T = TypeVar("_T")


def fetch_beside(
    sql: str, params: Sequence[Any], work: Callable[[], _T]
) -> tuple[list[tuple[Any, ...]], _T]:
    """All rows of `sql` (run in the caller's transaction) and `work()`'s result.

    On PostgreSQL the query runs from a second thread while this one runs `work` (pure Python:
    it must not use the database), as `partitions._execute_meanwhile` runs the index builds:
    psycopg releases the interpreter while it waits and converts the rows in C, and its
    connection lock keeps the two threads apart. This thread always waits for the second before
    returning or raising, so the connection is never used by both afterwards; an error in either
    reaches the caller (a psycopg error from the query, made Django's here), whose transaction
    rolls back. The query bypasses Django's cursor wrappers (query logging). Elsewhere (SQLite)
    the query runs first, then `work`.
    """
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return rows, work()
    connection.ensure_connection()
    pg = connection.connection  # the psycopg connection under Django's wrapper
    fetched: list[list[tuple[Any, ...]]] = []
    failed: list[BaseException] = []

    def fetch() -> None:
        try:
            fetched.append(pg.execute(sql, params).fetchall())
        except BaseException as exc:  # re-raised in the caller's thread, below
            failed.append(exc)

    thread = threading.Thread(target=fetch, name="fetch-beside")
    thread.start()
    try:
        result = work()
    finally:
        thread.join()
    if failed:
        with connection.wrap_database_errors:
            raise failed[0]
    return fetched[0], result
