"""Server time of the paged lists (web/paging.py) on 100k tournaments and 100k audit events:
first page, a page deep inside, the last page, each sort, a filter. A page must cost what the
first one does, whatever its place in the list.

Runs in a throw-away test database (test_<name>). The rows are written in bulk (bulk_create),
not through the services: 100k imports would take hours and the lists only read these columns.
The tournaments have no snapshot (their entries and version sort as 0); the audit events are
chained (hash, prev_hash) as record() chains them.

Figures are Django test Client round trips (routing, middleware, queries, template), best and
median of RUNS after one warm-up, and as a ratio to a floor measured in the same run: the raw
SQL a page of 50 cannot do without (SELECT the first 51 rows by primary key, and count(*)).
"""

import os
import re
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from html import unescape

sys.path.insert(0, os.path.dirname(__file__))

from bench_ui import _setup_database  # noqa: E402

ROWS = int(os.environ.get("BENCH_LIST_ROWS", "100000"))
RUNS = 7


def _seed():
    from django.contrib.auth.models import Group, User

    from refunds_admin.audit import chain
    from refunds_admin.audit.models import AuditEvent
    from refunds_admin.policies.models import PolicyVersion
    from refunds_admin.tournaments.models import Tournament

    auditor = User.objects.create_user("bench_auditor", password="x")
    auditor.groups.add(Group.objects.get(name="auditor"))
    policy = PolicyVersion.objects.order_by("pk").first()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    Tournament.objects.bulk_create(
        (
            Tournament(
                external_id=f"BENCH-{i:06d}",
                name=f"${(i % 7 + 1) * 10} Bench Special {i}",
                currency="USD",
                buy_in_cents=(i % 7 + 1) * 1000,
                fee_cents=(i % 3) * 100,
                # Every 20 minutes, 4 at a time: many ties on the start.
                starts_at=start + timedelta(minutes=20 * (i // 4)),
                policy_version=policy,
                formats=[],
            )
            for i in range(ROWS)
        ),
        batch_size=5000,
    )
    actions = ["snapshot.imported", "incident.recorded", "proposal.prepared", "proposal.approved"]
    prev = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first() or ""
    events = []
    for i in range(ROWS):
        event = AuditEvent(
            created_at=start + timedelta(seconds=30 * (i // 3)),  # 3 events a moment: ties
            actor_name="bench",
            action=actions[i % 4],
            object_type="tournament",
            object_id=str(i),
            tournament_external_id=f"BENCH-{i % ROWS:06d}",
            player_ids=[],
        )
        event.prev_hash = prev
        event.hash = prev = chain.digest(event, prev)
        events.append(event)
    AuditEvent.objects.bulk_create(events, batch_size=5000)
    print(f"   wrote {ROWS:,} tournaments and {ROWS:,} audit events in "
          f"{time.perf_counter() - started:.1f} s")  # fmt: skip
    return auditor


SQL_SHARE: dict[str, float] = {}


def _time(client, url):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:  # warm-up: how much of it is SQL
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    SQL_SHARE[url] = sum(float(q["time"]) for q in queries.captured_queries) * 1000
    SQL_SHARE[url + "#n"] = len(queries.captured_queries)
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
    return min(timings), statistics.median(timings), response.content.decode()


def _floor(table):
    from django.db import connection

    timings = []
    with connection.cursor() as cursor:
        for _ in range(RUNS):
            started = time.perf_counter()
            cursor.execute(f"SELECT * FROM {table} ORDER BY id DESC LIMIT 51")
            cursor.fetchall()
            cursor.execute(f"SELECT count(*) FROM {table}")
            cursor.fetchall()
            timings.append((time.perf_counter() - started) * 1000)
    return min(timings)


def _link(page, text):
    m = re.search(rf'<a href="(\?[^"]*)"[^>]*>{text}</a>', page)
    assert m, text
    return unescape(m.group(1))


def bench_lists():
    connection, old_name = _setup_database()
    try:
        from django.test import Client

        auditor = _seed()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        client = Client()
        client.force_login(auditor)
        for url, table, sorts, search in (
            (
                "/tournaments/",
                "tournaments_tournament",
                ["-started", "tournament", "buy_in", "-entries", "snapshot"],
                "q=Bench+Special+4",
            ),
            ("/audit/", "audit_auditevent", ["-when", "what", "object", "tournament"],
             "action=proposal.&tournament=BENCH-000042"),
        ):  # fmt: skip
            floor = _floor(table)
            print(f"   {url}: floor (51 rows by id + count(*)) {floor:.1f} ms")
            for sort in sorts:
                first = f"{url}?sort={sort}"
                best, median, page = _time(client, first)
                cases = [("first page", first, best, median)]
                deep = url + _link(page, "Last")
                b, m, last = _time(client, deep)
                cases.append(("last page", deep, b, m))
                for _ in range(3):  # a page from a cursor inside the list
                    last = client.get(url + _link(last, "Previous")).content.decode()
                inside = url + _link(last, "Previous")
                b, m, _ = _time(client, inside)
                cases.append(("page before the last 4", inside, b, m))
                for label, case, b, m in cases:
                    print(
                        f"   {url:<13} sort {sort:<12} {label:<24} best {b:6.1f} ms, "
                        f"median {m:6.1f} ms, {b / floor:5.1f}x floor; "
                        f"SQL {SQL_SHARE[case]:5.1f} ms in {SQL_SHARE[case + '#n']} queries"
                    )
            best, median, page = _time(client, f"{url}?{search}")
            shown = re.search(r"Showing [^<]*", page)
            print(
                f"   {url:<13} filter {search:<40} best {best:6.1f} ms, median {median:6.1f} ms, "
                f"{best / floor:5.1f}x floor ({shown.group(0) if shown else 'none shown'}); "
                f"SQL {SQL_SHARE[f'{url}?{search}']:5.1f} ms"
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    bench_lists()
