"""The differences a re-import makes between two snapshot versions (the incident page's
"Snapshot re-imported after the incident was recorded"): computed in one SQL statement on
PostgreSQL, checked against the plain Python form on random re-imports, and kept in the cache
once computed."""

import copy
from datetime import UTC, timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from refunds_admin.tournaments.models import Entry, Snapshot
from refunds_admin.web import queries
from tests.support.factories import cancelled_incident, import_doc, snapshot_doc

pytestmark = pytest.mark.django_db

# Entry ids whose order differs between code points and a language's collation (upper case
# before lower, accents after z, digits as text): the pages list them as Python sorts them.
_IDS = ["E10", "e10", "e20", "Zed", "zed", "é1", "e-1", "e_1", "1e", "ñ", "Ω"]

_edits = st.fixed_dictionaries(
    {
        # snapshot_doc's entries: e1-e4 active, e5-e9 eliminated; e1 or e2 stays active.
        "remove": st.sets(st.integers(2, 8), max_size=4),
        "eliminate": st.sets(st.integers(0, 1), max_size=1),
        "chips": st.dictionaries(st.integers(0, 3), st.integers(1, 90_000), max_size=4),
        "buy_in": st.dictionaries(
            st.integers(0, 8), st.sampled_from(["29.00", "0.00"]), max_size=3
        ),
        "fee": st.dictionaries(st.integers(0, 8), st.sampled_from(["2.00", "3.50"]), max_size=3),
        "add": st.lists(st.sampled_from(_IDS), unique=True, max_size=6),
        "prize_2": st.sampled_from([None, "310.00", "300.00"]),
    }
)


def _edited(doc, edits, external_id):
    """The platform's next version of `doc`: entries removed, eliminated, added; chips and
    amounts paid changed; place 2's prize changed."""
    new = copy.deepcopy(doc)
    new["tournament"]["external_id"] = external_id
    entries = new["entries"]
    for i, chips in edits["chips"].items():
        entries[i]["chips"] = chips
    for i in edits["eliminate"]:
        entries[i]["status"] = "eliminated"
        entries[i].pop("chips", None)
    for i, amount in edits["buy_in"].items():
        entries[i]["buy_in_paid"] = amount
    for i, amount in edits["fee"].items():
        entries[i]["fee_paid"] = amount
    entries = [e for i, e in enumerate(entries) if i not in edits["remove"]]
    for n, entry_id in enumerate(edits["add"]):
        entries.append({"entry_id": entry_id, "player_id": f"new{n}", "status": "eliminated"})
    new["entries"] = entries
    new["tournament"]["chips_in_play"] = sum(
        e.get("chips", 0) for e in entries if e["status"] == "active"
    )
    if edits["prize_2"]:
        new["tournament"]["prizes"][1]["amount"] = edits["prize_2"]
    return new


@pytest.mark.postgres
@hsettings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(edits=_edits, n=st.integers(0, 10**9))
def test_the_sql_differences_are_the_python_ones(support, edits, n):
    """Two forms of one computation (queries._entry_changes_in_sql and _entry_changes, the
    prize tables' in SQL and in Python) give the same differences on any re-import."""
    doc = snapshot_doc(f"SC-{n}", eliminated=5)
    assert [e["status"] for e in doc["entries"]] == ["active"] * 4 + ["eliminated"] * 5
    old = import_doc(support, doc=doc)
    # The second version under another tournament: the comparison reads only the two
    # versions' entries, and a re-import of the same tournament would need its rules kept.
    new = import_doc(support, doc=_edited(doc, edits, f"SC-{n}-2"))
    assert queries._entry_changes_in_sql(old.pk, new.pk) == queries._entry_changes(old, new)
    expected = [
        {"place": p, "before": b, "after": a}
        for p, (b, a) in sorted(_both(queries._prize_table(old), queries._prize_table(new)).items())
        if b != a
    ]
    assert queries._prize_changes(old, new) == expected


def _both(before, after):
    return {p: (before.get(p), after.get(p)) for p in set(before) | set(after)}


def test_the_incident_page_counts_every_change_and_names_the_first_ten(client, support):
    incident = cancelled_incident(support, external_id="SC-PAGE")
    doc = snapshot_doc("SC-PAGE", starts_at=incident.tournament.starts_at)
    # Twelve late registrations the platform had left out, and e9 no longer listed.
    doc["entries"] = [e for e in doc["entries"] if e["entry_id"] != "e9"]
    doc["entries"] += [
        {"entry_id": f"late{i:02d}", "player_id": f"pl{i}", "status": "eliminated"}
        for i in range(12)
    ]
    import_doc(support, doc=doc)
    client.force_login(support)
    page = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    section = page.split('id="snapshot-changes"')[1].split("</dl>")[0]
    first_ten = ", ".join(f"late{i:02d}" for i in range(10))
    assert f"12 added ({first_ten}, …)" in section
    assert "1 removed (e9)" in section and "late10" not in section


def test_the_differences_are_computed_once_per_pair_of_versions(client, support):
    """Two versions never change, so the second view reads their differences from the cache:
    no query reads their entries again."""
    cache.clear()
    incident = cancelled_incident(support, external_id="SC-ONCE")
    doc = snapshot_doc(
        "SC-ONCE", starts_at=incident.tournament.starts_at, entry_fields={1: {"fee_paid": "2.00"}}
    )
    import_doc(support, doc=doc)
    client.force_login(support)
    url = reverse("incident_detail", args=[incident.pk])
    entries = Entry._meta.db_table
    with CaptureQueriesContext(connection) as first:
        assert "1 entry with a different amount (e2: fee paid)" in client.get(url).content.decode()
    assert any(entries in q["sql"] for q in first.captured_queries)
    with CaptureQueriesContext(connection) as second:
        assert "1 entry with a different amount (e2: fee paid)" in client.get(url).content.decode()
    assert not any(entries in q["sql"] for q in second.captured_queries)


def test_a_version_imported_before_its_start_was_kept_shows_its_start_from_the_document(
    client, support
):
    incident = cancelled_incident(support, external_id="SC-START")
    first = incident.tournament.current_snapshot
    started = incident.tournament.starts_at.astimezone(UTC)
    later = started - timedelta(minutes=30)
    import_doc(support, doc=snapshot_doc("SC-START", starts_at=later))
    # As a version stored by an earlier release: no start of its own.
    Snapshot.objects.filter(pk=first.pk).update(starts_at=None)
    cache.clear()
    client.force_login(support)
    page = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    section = page.split('id="snapshot-changes"')[1].split("</dl>")[0]
    start = section.split("<dt>Start</dt>")[1].split("</dd>")[0]
    was, now = (f'<time datetime="{t:%Y-%m-%dT%H:%M:%SZ}"' for t in (started, later))
    assert was in start.split("→")[0] and now in start.split("→")[1]
