"""Server time of the browser app's heaviest pages on a 100k-line proposal (issue 5 goals:
any breakdown page, with a search, <= 50 ms; dashboard <= 100 ms; issue 25: the tournament page
of a 100k-entry tournament <= 50 ms, and pages that do not grow with the proposal).

Runs in a throw-away test database (test_<name>), with the lines written by COPY. Times are
Django test Client round trips (URL routing, middleware, queries, template), best and median of
RUNS, after one warm-up request; beside them the median CPU time of this process per request
(the page's Python; PostgreSQL's side is in the wall time only), which swings less on the
shared machine.

The growth check (issue 25): the same pages on a proposal of each size in BENCH_UI_SIZES
(default 100000,250000; one size skips it), timed in turn, case by case, and the ratio of the
largest's median to the smallest's: about equal (goal <= 1.25).
"""

import os
import statistics
import time

import orjson

SIZES = tuple(
    int(n)
    for n in os.environ.get(
        "BENCH_UI_SIZES", os.environ.get("BENCH_UI_LINES", "100000,250000")
    ).split(",")
)
RUNS = 9
GROWTH_GOAL = 1.25


def _setup_database():
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
    os.environ.setdefault("DEBUG", "1")  # development settings (DEBUG is off by default)
    django.setup()
    from django.conf import settings
    from django.db import connection

    # Not setup_test_environment(): its instrumented template rendering would slow every page
    # down; the test Client only needs its host allowed.
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    return connection, old_name


def _staff():
    from django.contrib.auth.models import Group, User

    support = User.objects.create_user("bench_support", password="x")
    support.groups.add(Group.objects.get(name="support"))
    manager = User.objects.create_user("bench_manager", password="x")
    manager.groups.add(Group.objects.get(name="manager"))
    return support, manager


def _imported_incident(external_id, lines, support):
    """The bench's easy snapshot of `lines` lines (a fifth as many eliminated entries as active),
    imported through the service, with an incident recorded 3 h 14 min into play; the document
    and the incident."""
    from datetime import timedelta

    from bench_limits import _document

    from refunds_admin.incidents import services as incidents

    doc = _document("ranges", lines * 5 // 6, external_id=external_id, relative_start=True)
    snapshot = incidents.import_snapshot(orjson.dumps(doc), acting_user=support, source="cli")
    tournament = snapshot.tournament
    incident = incidents.record_incident(
        tournament, failed_at=tournament.starts_at + timedelta(hours=3, minutes=14),
        cause="server_crash", description="benchmark", acting_user=support,
    )  # fmt: skip
    return doc, incident


def _make_proposal(lines, support, manager):
    """A submitted proposal of `lines` lines, built the way staff build one: import the
    snapshot, record the incident, declare it not resumable, prepare, submit (all through the
    services)."""

    from django.db import connection

    from refunds_admin.incidents import services as incidents
    from refunds_admin.proposals import services as proposals

    started = time.perf_counter()
    _, incident = _imported_incident(f"BENCH-UI-{lines}", lines, support)
    incidents.declare_not_resumable(incident, reason="benchmark", acting_user=manager)
    proposal = proposals.prepare_proposal(incident, acting_user=support)
    proposal = proposals.submit_proposal(proposal, acting_user=support)
    print(
        f"   imported and prepared {proposal.lines_count:,} lines in "
        f"{time.perf_counter() - started:.2f} s ({connection.vendor})"
    )
    return proposal


def _reimported_incident(lines, support):
    """An incident whose tournament's snapshot was re-imported after it was recorded, the way the
    platform sends better figures: three entries' buy-ins corrected, chips moved between a hundred
    active entries. Its page lists the differences between the two versions (issue 25: a page
    that must not grow with the snapshot)."""
    from refunds_admin.incidents import services as incidents

    doc, incident = _imported_incident(f"BENCH-UI-RE-{lines}", lines, support)
    entries = doc["entries"]
    for i in (11, len(entries) // 20, len(entries) // 2):  # at 100k lines: 11, 5,000, 50,000
        entries[i]["buy_in_paid"] = "99.00"
    for i in range(0, 200, 2):  # chips move from each even entry to the next: the sum holds
        moved = entries[i]["chips"] // 2
        entries[i]["chips"] -= moved
        entries[i + 1]["chips"] += moved
    incidents.import_snapshot(orjson.dumps(doc), acting_user=support, source="cli")
    return incident


def _forget(incident):
    """As for the first viewer in a fresh process: the incident page's snapshot differences not
    in the shared cache (only their keys: the cache may be the Celery broker's Redis database),
    and no parsed snapshot kept in this process."""
    from django.core.cache import cache

    from refunds_admin.tournaments.models import Tournament
    from refunds_admin.tournaments.services import _PARSED, current_snapshot_row
    from refunds_admin.web import queries

    old = queries.snapshot_at_recording(incident)
    new = current_snapshot_row(Tournament.objects.get(pk=incident.tournament_id))
    cache.delete_many([queries.changes_key(old, new, with_entries=w) for w in (True, False)])
    _PARSED.clear()


def _time(client, url, runs=RUNS, *, forget=None):
    """Best and median wall ms, and median CPU ms of this process, of `runs` requests (each
    after `forget()` when given: as the first view)."""
    response = client.get(url)  # warm-up (and a check that the page works)
    assert response.status_code == 200, (url, response.status_code)
    timings, cpu = [], []
    for _ in range(runs):
        if forget:
            forget()
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        assert response.status_code == 200
    return min(timings), statistics.median(timings), statistics.median(cpu)


def _cases():
    """(label, address, goal in ms, whether it is one proposal's page)."""
    base = "{base}"
    return [
        ("breakdown, first page", base, 50, True),
        ("breakdown, last page (keyset)", base + "?last=1", 50, True),
        ("breakdown, page after line 50,000", base + "?after=50000", 50, True),
        ("breakdown, sorted by total, last page", base + "?sort=total&last=1", 50, True),
        ("breakdown, sorted by chips, next page", base + "?sort=chips&after=150000.2", 50, True),
        ("breakdown, sorted by chips descending", base + "?sort=-chips", 50, True),
        ("breakdown, search by player id", base + "?q=p0054321", 50, True),
        ("breakdown, search by entry id", base + "?q=e0054321", 50, True),
        ("breakdown, search by screen name", base + "?q=player9999", 50, True),
        # Past queries.SEARCH_LIST (2,000) matches the lines are walked in order, each line's
        # screen name read from its entry: a prefix a tenth of the names share. A prefix 1,111
        # names share is below it: their lines are picked by position (walked, a page of 100
        # would pass about 9,000 lines).
        ("breakdown, name prefix of a tenth of the entries", base + "?q=player1", 50, True),
        ("breakdown, name prefix of 1,111 entries", base + "?q=player99", 50, True),
        (
            "breakdown, eliminated only, page after line 50,000",
            base + "?show=eliminated&after=50000",
            50,
            True,
        ),
        ("breakdown, search with no match", base + "?q=nobody", 50, True),
        ("breakdown, capped only, last page", base + "?show=capped&last=1", 50, True),
        ("breakdown rows only (htmx partial)", base + "?after=70000", 50, True),
        ("approval page (incident, rule, money, top 10)", base + "approval/", 50, True),
        ("tournament page (versions, prizes, entries)", "/tournaments/{tournament}/", 50, True),
        ("incident page, snapshot re-imported since", "/incidents/{incident}/", 50, True),
        # Its differences not in the cache (the first view of the day, before the worker has
        # compared the versions): the page is drawn without them, then htmx fetches them.
        ("incident page, re-imported, first view (cold)", "/incidents/{incident}/", 50, True),
        (
            "its comparison (htmx), first view (cold)",
            "/incidents/{incident}/snapshot-changes/",
            50,
            True,
        ),
        ("proposals worklist, submitted", "/proposals/", 50, False),
        ("incidents worklist, cancelled", "/incidents/?status=cancelled", 50, False),
        ("tournaments list with status", "/tournaments/", 50, False),
        ("dashboard", "/", 100, False),
    ]


def bench_ui():
    connection, old_name = _setup_database()
    try:
        from django.test import Client

        support, manager = _staff()
        proposals = [_make_proposal(lines, support, manager) for lines in SIZES]
        reimported = [_reimported_incident(lines, support) for lines in SIZES]
        client = Client()
        client.force_login(manager)
        print(f"   load average {os.getloadavg()[0]:.1f} (1 min)")
        medians = {}  # (label, size) -> median wall ms
        for label, path, goal, per_proposal in _cases():
            headers = (
                {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "lines"} if "htmx" in label else {}
            )
            client.defaults.update(headers)
            for lines, proposal, incident in zip(SIZES, proposals, reimported, strict=True):
                if not per_proposal and lines != SIZES[0]:
                    continue  # the worklists and the dashboard: one of them is enough
                url = path.format(
                    base=f"/proposals/{proposal.pk}/",
                    tournament=proposal.incident.tournament_id,
                    incident=incident.pk,
                )
                forget = (lambda i=incident: _forget(i)) if "cold" in label else None
                best, median, cpu = _time(client, url, forget=forget)
                medians[label, lines] = median
                verdict = "ok" if median <= goal else "OVER GOAL"
                size = f"{lines // 1000}k" if per_proposal else ""
                print(
                    f"   {label:<46} {size:>5} best {best:6.1f} ms, median {median:6.1f} ms, "
                    f"CPU {cpu:5.1f} ms; goal (median) {goal} ms: {verdict}"
                )
            for key in headers:
                client.defaults.pop(key)
        if len(SIZES) > 1:
            small, large = SIZES[0], SIZES[-1]
            print(f"   growth: median at {large // 1000}k / median at {small // 1000}k lines")
            for label, _, _, per_proposal in _cases():
                if per_proposal:
                    ratio = medians[label, large] / medians[label, small]
                    verdict = "ok" if ratio <= GROWTH_GOAL else "OVER GOAL"
                    print(f"   {label:<46} {ratio:5.2f}; goal {GROWTH_GOAL}: {verdict}")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    bench_ui()
