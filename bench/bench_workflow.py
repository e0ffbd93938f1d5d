"""Workflow benchmarks on PostgreSQL: import a 100k-active-entry snapshot, prepare its proposal.

Goals (issue 3): import <= 2 s (COPY, not bulk_create), prepare <= 3 s. The figures are wall
time of the service call as a user would wait for it, in a database of its own
(`test_<name>`, created and dropped here) so that the benchmark never touches real data.
"""

import json
import time
from datetime import UTC, datetime, timedelta

import django
from django.conf import settings
from django.db import connection
from django.test.utils import setup_databases, teardown_databases
from gen_snapshot import make_snapshot

ACTIVE = 100_000
GOAL_IMPORT = 2.0
GOAL_PREPARE = 3.0


def _postgres():
    django.setup()  # run.py sets DJANGO_SETTINGS_MODULE; setting up twice is harmless
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        print("   skipped: needs PostgreSQL (set DATABASE_URL=postgres://...)")
        return False
    return True


_state = {}


def _database():
    """A throwaway database with the schema, shared by the two benchmarks of this module."""
    if "db" not in _state:
        _state["db"] = setup_databases(verbosity=0, interactive=False, keepdb=False)
    return _state["db"]


def _users():
    from django.contrib.auth.models import Group, User

    users = {}
    for name, role in (("bench_support", "support"), ("bench_manager", "manager")):
        user, _ = User.objects.get_or_create(username=name)
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        users[role] = user
    return users


def _document():
    if "doc" not in _state:
        doc = make_snapshot(ACTIVE, external_id="BENCH-WORKFLOW-100K")
        doc.pop("incident")
        # Started four hours ago, so that a failure 3 h 14 min in is in the past.
        starts_at = datetime.now(UTC) - timedelta(hours=4)
        doc["tournament"]["starts_at"] = starts_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        _state["doc"] = json.dumps(doc).encode()
    return _state["doc"]


def _report(what, seconds, goal):
    verdict = "OK" if seconds <= goal else "OVER GOAL"
    print(f"   {what}: {seconds:.2f} s (goal <= {goal:.0f} s) {verdict}", flush=True)


def bench_import_100k():
    if not _postgres():
        return
    from refunds_admin.tournaments.services import import_snapshot

    _database()
    users = _users()
    raw = _document()
    print(f"   snapshot: {ACTIVE:,} active entries, {len(raw) / 1e6:.1f} MB of JSON")
    started = time.perf_counter()
    snapshot = import_snapshot(raw, acting_user=users["support"], source="cli")
    elapsed = time.perf_counter() - started
    assert snapshot.entries.count() == ACTIVE
    _state["snapshot"] = snapshot
    _report("import_snapshot (parse + validate + COPY entries)", elapsed, GOAL_IMPORT)


def bench_prepare_100k():
    if not _postgres():
        return
    from refunds_admin.incidents import services as incidents
    from refunds_admin.proposals.services import prepare_proposal
    from refunds_admin.tournaments import services as tournaments

    try:
        snapshot = _state.get("snapshot")
        if snapshot is None:
            _database()
            snapshot = tournaments.import_snapshot(
                _document(), acting_user=_users()["support"], source="cli"
            )
        users = _users()
        tournament = snapshot.tournament
        incident = incidents.record_incident(
            tournament,
            failed_at=tournament.starts_at + timedelta(hours=3, minutes=14),
            cause="server_crash",
            description="benchmark",
            acting_user=users["support"],
        )
        incidents.declare_not_resumable(incident, reason="benchmark", acting_user=users["manager"])
        # The parsed snapshot is cached after the first use; prepare as staff would after a
        # fresh start too, so the parse is included in the figure.
        tournaments._PARSED.clear()
        started = time.perf_counter()
        proposal = prepare_proposal(incident, acting_user=users["support"])
        elapsed = time.perf_counter() - started
        assert proposal.lines.count() == ACTIVE
        _report(
            f"prepare_proposal ({proposal.rule}, parse + compute + COPY lines)",
            elapsed,
            GOAL_PREPARE,
        )
        started = time.perf_counter()
        prepare_proposal(incident, acting_user=users["support"])
        _report(
            "prepare_proposal again (snapshot already parsed; replaces the draft: delete + COPY)",
            time.perf_counter() - started,
            GOAL_PREPARE,
        )
    finally:
        connection.close()
        if "db" in _state:
            _drop(_state.pop("db"))


def _drop(old_config):
    # The audit table refuses TRUNCATE/DELETE by design; dropping the whole database is fine.
    teardown_databases(old_config, verbosity=0)
