"""Server time of the browser app's heaviest pages on a 100k-line proposal (issue 5 goals:
any breakdown page, with a search, <= 50 ms; dashboard <= 100 ms).

Runs in a throw-away test database (test_<name>), with the 100k lines written by COPY. Times are
Django test Client round trips (URL routing, middleware, queries, template), best and median of
RUNS, after one warm-up request.
"""

import os
import statistics
import time

LINES = int(os.environ.get("BENCH_UI_LINES", "100000"))  # 250000: pages must not grow
RUNS = 9


def _setup_database():
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
    django.setup()
    from django.conf import settings
    from django.db import connection

    # Not setup_test_environment(): its instrumented template rendering would slow every page
    # down; the test Client only needs its host allowed.
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    return connection, old_name


def _make_proposal():
    from datetime import UTC, datetime, timedelta

    from django.contrib.auth.models import Group, User
    from django.db import connection

    from refunds_admin.incidents.models import Incident
    from refunds_admin.proposals.models import PayoutLine, PayoutProposal
    from refunds_admin.tournaments.models import Snapshot, Tournament

    support = User.objects.create_user("bench_support", password="x")
    support.groups.add(Group.objects.get(name="support"))
    manager = User.objects.create_user("bench_manager", password="x")
    manager.groups.add(Group.objects.get(name="manager"))
    starts = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    tournament = Tournament.objects.create(
        external_id="BENCH-100K", name="Bench 100k", currency="USD",
        buy_in_cents=10000, fee_cents=900, starts_at=starts,
    )  # fmt: skip
    snapshot = Snapshot.objects.create(
        tournament=tournament, version=1, document="{}", sha256="0" * 64, source="demo",
        entries_count=LINES, active_count=LINES // 2, imported_by=support,
    )  # fmt: skip
    incident = Incident.objects.create(
        tournament=tournament, status="cancelled", failed_at=starts + timedelta(hours=3),
        cause="server_crash", recorded_by=support, rule="not_in_the_money",
        cancelled_because="window_passed", cancelled_at=starts + timedelta(hours=4),
    )  # fmt: skip
    rows = []
    total = 0
    for i in range(LINES):
        active = i % 2 == 0
        chips = (i * 7919) % 200_000 + 1_000 if active else 0
        equity = chips * 3 if active else 0
        line_total = 10000 + equity + 900 if active else 0
        total += line_total
        rows.append(
            (i, f"e{i:07d}", f"p{i:07d}", f"player{i}", "active" if active else "eliminated",
             chips, 10000 if active else 0, 0, equity, 900 if active else 0, line_total,
             i % 997 == 0)
        )  # fmt: skip
    proposal = PayoutProposal.objects.create(
        incident=incident, snapshot=snapshot, version=1, status="submitted",
        rule="not_in_the_money", currency="USD", failed_at=incident.failed_at,
        site_wide_issue=False, summary={"entries": LINES, "active": LINES // 2},
        fingerprint="b" * 64, total_cents=total, lines_count=LINES, prepared_by=support,
        prepared_at=starts, submitted_by=support, submitted_at=starts,
    )  # fmt: skip
    columns = (
        "position", "entry_id", "player_id", "screen_name", "status", "chips",
        "buy_in_refund_cents", "next_prize_cents", "chip_equity_cents", "fee_refund_cents",
        "total_cents", "capped",
    )  # fmt: skip
    started = time.perf_counter()
    if connection.vendor == "postgresql":
        # As prepare_proposal writes them: the proposal's own partition, indexed after the COPY.
        from django.db import transaction

        from refunds_admin.bulk import copy_into_partition

        with transaction.atomic():
            copy_into_partition(
                PayoutLine, "proposal_id", proposal.pk, ("proposal_id", *columns),
                ((proposal.pk, *row) for row in rows),
            )  # fmt: skip
    else:
        PayoutLine.objects.bulk_create(
            (PayoutLine(proposal=proposal, **dict(zip(columns, row, strict=True))) for row in rows),
            batch_size=5000,
        )
    print(
        f"   wrote {LINES:,} lines in {time.perf_counter() - started:.2f} s ({connection.vendor})"
    )
    # prepare_proposal stores the approver's figures with the lines (proposals/figures.py);
    # this proposal was written directly, so compute the same figures once from its lines.
    from refunds_admin.proposals import figures

    started = time.perf_counter()
    stored = figures.from_lines(proposal, {})
    stored["rule_sentence"] = "failed 3 h after start (bench)"
    stored["elapsed_seconds"] = 3 * 3600
    PayoutProposal.objects.filter(pk=proposal.pk).update(figures=stored)
    print(f"   figures from the lines in {time.perf_counter() - started:.2f} s (once, at prepare)")
    return proposal, manager


def _time(client, url, runs=RUNS):
    response = client.get(url)  # warm-up (and a check that the page works)
    assert response.status_code == 200, (url, response.status_code)
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    return min(timings), statistics.median(timings)


def bench_ui():
    connection, old_name = _setup_database()
    try:
        from django.test import Client

        proposal, manager = _make_proposal()
        client = Client()
        client.force_login(manager)
        base = f"/proposals/{proposal.pk}/"
        cases = [
            ("breakdown, first page", base, 50),
            ("breakdown, last page (keyset)", base + "?last=1", 50),
            ("breakdown, page after line 50,000", base + "?after=50000", 50),
            ("breakdown, sorted by total, last page", base + "?sort=total&last=1", 50),
            ("breakdown, sorted by chips, next page", base + "?sort=chips&after=150000.2", 50),
            ("breakdown, search by player id", base + "?q=p0054321", 50),
            ("breakdown, search by screen name", base + "?q=player9999", 50),
            ("breakdown, search with no match", base + "?q=nobody", 50),
            ("breakdown, capped only, last page", base + "?show=capped&last=1", 50),
            ("breakdown rows only (htmx partial)", base + "?after=70000", 50),
            ("approval page (incident, rule, money, top 10)", base + "approval/", 50),
            ("proposals worklist, submitted", "/proposals/", 50),
            ("incidents worklist, cancelled", "/incidents/?status=cancelled", 50),
            ("tournaments list with status", "/tournaments/", 50),
            ("dashboard", "/", 100),
        ]
        for label, url, goal in cases:
            headers = (
                {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "lines"} if "htmx" in label else {}
            )
            if headers:
                client.defaults.update(headers)
            best, median = _time(client, url)
            for key in headers:
                client.defaults.pop(key)
            verdict = "ok" if best <= goal else "OVER GOAL"
            print(
                f"   {label:<46} best {best:6.1f} ms, median {median:6.1f} ms; goal {goal} ms: {verdict}"
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    bench_ui()
