"""Upgrading gives each tournament's current snapshot version its start (tournaments migration
0017), the one the tournament row holds; an older version keeps none, and the incident page
reads its start from its stored form."""

from datetime import timedelta

import pytest

from tests.support.factories import import_doc
from tests.support.migrations import latest, migrate

BEFORE = [("tournaments", "0016_snapshot_starts_at")]
AFTER = [("tournaments", "0017_current_snapshots_starts_at")]


@pytest.mark.django_db(transaction=True)
def test_the_current_version_gets_its_start_and_an_older_one_keeps_none(support):
    first = import_doc(support, external_id="MIG-START")
    started = first.tournament.starts_at - timedelta(minutes=20)
    second = import_doc(support, external_id="MIG-START", starts_at=started)
    try:
        old_apps = migrate(BEFORE)
        # As stored by the release before: no version keeps its start.
        old_apps.get_model("tournaments", "Snapshot").objects.update(starts_at=None)
        Snapshot = migrate(AFTER).get_model("tournaments", "Snapshot")
        assert Snapshot.objects.get(pk=second.pk).starts_at == started
        assert Snapshot.objects.get(pk=first.pk).starts_at is None
    finally:
        migrate(latest())
