"""Database errors read by their SQLSTATE, on real PostgreSQL errors: the database gone means
wait, a lost race means again at once, a statement timeout means the attempt fails with its
reason (refunds_admin/jobs/errors.py)."""

import threading

import psycopg
import pytest
from django.db import DatabaseError, OperationalError, connection, connections, transaction

from refunds_admin.jobs import errors
from tests.support.posting_support import worker_database_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _caught(sql, *params):
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    except DatabaseError as exc:
        return exc
    raise AssertionError(f"{sql} did not fail")


def test_a_statement_timeout_fails_the_attempt_and_says_so():
    exc = _caught("SET LOCAL statement_timeout = 50; SELECT pg_sleep(2)")
    assert errors.classify(exc) == errors.Kind.FAIL
    assert errors.describe(exc).startswith("statement timeout (SQLSTATE 57014): ")


def test_a_killed_connection_means_waiting_for_the_database():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    with psycopg.connect(worker_database_url().replace("postgres://", "postgresql://")) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except OperationalError as exc:
        assert errors.classify(exc) == errors.Kind.UNAVAILABLE, errors.describe(exc)
    else:
        raise AssertionError("the killed session still answered")
    finally:
        connection.close()


def test_a_deadlock_is_a_race_to_run_again_at_once():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS jobs_race (id int primary key, n int)")
        cursor.execute("INSERT INTO jobs_race VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING")
    both_locked = threading.Barrier(2)
    caught = []

    def worker(first, second):
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("UPDATE jobs_race SET n = n + 1 WHERE id = %s", [first])
                both_locked.wait(timeout=10)
                cursor.execute("UPDATE jobs_race SET n = n + 1 WHERE id = %s", [second])
        except DatabaseError as exc:
            caught.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=ab) for ab in ((1, 2), (2, 1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE jobs_race")
    [exc] = caught  # PostgreSQL picks one loser
    assert errors.classify(exc) == errors.Kind.RETRY
    assert "deadlock (SQLSTATE 40P01)" in errors.describe(exc)


def test_other_errors_are_not_database_errors_to_classify():
    assert errors.classify(ValueError("no")) is None
