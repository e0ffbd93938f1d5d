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

# The second thread's name, so that a test can check none is left running.
THREAD_NAME = "database-beside"


def fetch_beside(
    sql: str, params: Sequence[Any], work: Callable[[], _T]
) -> tuple[list[tuple[Any, ...]], _T]:
    """All rows of `sql` (run in the caller's transaction) and `work()`'s result.

    On PostgreSQL the query runs from a second thread while this one runs `work` (pure Python:
    it must not use the database), by `run_beside`, as the index builds of a partition run:
    psycopg converts the rows in C meanwhile. The query bypasses Django's cursor wrappers (query
    logging). Elsewhere (SQLite) the query runs first, then `work`.
    """
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return rows, work()
    connection.ensure_connection()
    pg = connection.connection  # the psycopg connection under Django's wrapper
    with connection.wrap_database_errors:  # a psycopg error from the query becomes Django's
        return run_beside(lambda: pg.execute(sql, params).fetchall(), work)


def run_beside(database_work: Callable[[], Any], work: Callable[[], _T]) -> tuple[Any, _T]:
    """`database_work()` from a second thread while this one runs `work()`; both results.

    `database_work` uses the psycopg connection under Django's (in the caller's transaction);
    `work` must not use the database. psycopg releases the interpreter while it waits, and its
    connection lock keeps the two threads apart. This thread always waits for the second before
    returning or raising, so the connection is never used by both afterwards; an error in
    either reaches the caller (a psycopg error as it is: the caller makes it Django's), whose
    transaction rolls back."""
    done: list[Any] = []
    failed: list[BaseException] = []

    def in_second_thread() -> None:
        try:
            done.append(database_work())
        except BaseException as exc:  # re-raised in the caller's thread, below
            failed.append(exc)

    thread = threading.Thread(target=in_second_thread, name=THREAD_NAME)
    thread.start()
    try:
        result = work()
    finally:
        thread.join()
    if failed:
        raise failed[0]
    return done[0], result
