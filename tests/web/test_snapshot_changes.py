"""The differences a re-import makes between two snapshot versions (the incident page's
"Snapshot re-imported after the incident was recorded"): computed in one SQL statement on
PostgreSQL, checked against the plain Python form on random re-imports, and kept in the cache
once computed."""

import copy
from datetime import UTC, timedelta

import pytest
from django.core.cache import cache
from django.db import connection, transaction
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
_IDS = ["E10", "e10", "Zed", "zed", "é1", "e-1", "e_1", "1e", "ñ", "Ω", "a", "B"]
# How an entry paid its buy-in and fee: not said (all in cash), or as the list says. The same
# two payments in the other order are another list (the refund follows the order).
_PAID = [None, "cash", "ticket then cash", "cash then ticket"]


def _cents(text):
    whole, cents = text.split(".")
    return int(whole) * 100 + int(cents)


def _amount(cents):
    return f"{cents // 100}.{cents % 100:02d}"


def _paid_with(entry, form):
    """`form` of _PAID for `entry`, adding up to what it paid (as the snapshot requires)."""
    buy_in = _cents(entry.get("buy_in_paid", "30.00"))
    fee = _cents(entry.get("fee_paid", "3.00"))
    ticket = {"method": "ticket", "amount": _amount(buy_in), "ticket_id": f"T-{entry['entry_id']}"}
    cash = {"method": "cash", "amount": _amount(fee)}
    return {
        "cash": [{"method": "cash", "amount": _amount(buy_in + fee)}],
        "ticket then cash": [ticket, cash],
        "cash then ticket": [cash, ticket],
    }[form]


def _version(doc, draw, *, active, total):
    """One version of `doc` as the platform might send it: entries eliminated, removed, added;
    chips, amounts paid, finish places, prizes awarded and payments changed; the prize table's
    place 2 changed, place 3 dropped or a place 4 added."""
    doc = copy.deepcopy(doc)
    entries = doc["entries"]
    some = st.integers(0, total - 1)
    # Entry 0 stays active and listed: a version has an active entry.
    for i in draw(st.sets(st.integers(1, active - 1), max_size=2)):
        entries[i]["status"] = "eliminated"
        entries[i].pop("chips")
    for i, chips in draw(st.dictionaries(st.integers(0, active - 1), st.sampled_from([500, 1500, 1000, 7]), max_size=14)).items():  # fmt: skip
        if entries[i]["status"] == "active":
            entries[i]["chips"] = chips
    for i, amount in draw(st.dictionaries(some, st.sampled_from(["29.00", "0.00"]), max_size=12)).items():  # fmt: skip
        entries[i]["buy_in_paid"] = amount
    for i, amount in draw(st.dictionaries(some, st.sampled_from(["2.00", "3.50"]), max_size=12)).items():  # fmt: skip
        entries[i]["fee_paid"] = amount
    places = st.tuples(st.sampled_from([None, 40, 41]), st.sampled_from([None, "0.00", "12.50"]))
    for i, (place, prize) in draw(st.dictionaries(st.integers(active, total - 1), places, max_size=6)).items():  # fmt: skip
        for field, value in (("finish_place", place), ("prize_awarded", prize)):
            if value is None:
                entries[i].pop(field, None)
            else:
                entries[i][field] = value
    for i, form in draw(st.dictionaries(some, st.sampled_from(_PAID), max_size=8)).items():
        if form is not None:
            entries[i]["paid_with"] = _paid_with(entries[i], form)
    removed = draw(st.sets(st.integers(1, total - 1), max_size=12))
    entries = [e for i, e in enumerate(entries) if i not in removed]
    late = draw(st.lists(st.sampled_from(_IDS + [f"late{k}" for k in range(14)]), unique=True, max_size=14))  # fmt: skip
    known = {e["entry_id"] for e in entries}
    entries += [
        {"entry_id": entry_id, "player_id": f"new-{entry_id}", "status": "eliminated"}
        for entry_id in late
        if entry_id not in known
    ]
    doc["entries"] = entries
    doc["tournament"]["chips_in_play"] = sum(
        e.get("chips", 0) for e in entries if e["status"] == "active"
    )
    prizes = doc["tournament"]["prizes"]
    prizes[1]["amount"] = draw(st.sampled_from(["300.00", "310.00"]))
    shape = draw(st.sampled_from(["same", "no place 3", "place 4"]))
    if shape == "no place 3":
        prizes.pop(2)
    elif shape == "place 4":
        prizes.append({"place": 4, "amount": "50.00"})
    return doc


@pytest.mark.postgres
@hsettings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(0, 10**9))
def test_the_sql_differences_are_the_python_ones(support, data, n):
    """Two forms of one computation (queries._entry_changes_in_sql and _entry_changes, the
    prize tables' in SQL and in Python) give the same differences between any two versions:
    more than CHANGE_EXAMPLES changes of a kind, ties in the chips' changes, fields that are
    missing in one version (finish place, prize awarded, payments), ids in every order."""
    # Each example's two imports (two new partitions and their indexes) are rolled back with
    # it, so that the locks they hold do not add up over hundreds of examples in the test's
    # one transaction (PostgreSQL's lock table would run out).
    with transaction.atomic():
        active = data.draw(st.sampled_from([4, 15]))
        eliminated = data.draw(st.sampled_from([5, 15]))
        total = active + eliminated
        base = snapshot_doc(f"SC-{n}", active_chips=[1000] * active, eliminated=eliminated)
        if data.draw(st.booleans()):
            for i, entry in enumerate(base["entries"]):
                entry["entry_id"] = _IDS[i] if i < len(_IDS) else f"x{i}"
        # The two versions under two tournaments: the comparison reads only the two versions'
        # entries and prize tables, and a re-import of one tournament would keep its rules.
        old = import_doc(support, doc=_version(base, data.draw, active=active, total=total))
        new_doc = _version(base, data.draw, active=active, total=total)
        new_doc["tournament"]["external_id"] = f"SC-{n}-2"
        new = import_doc(support, doc=new_doc)
        assert queries._entry_changes_in_sql(old.pk, new.pk) == queries._entry_changes(old, new)
        before, after = queries._prize_table(old), queries._prize_table(new)
        changed = [
            {"place": p, "before": before.get(p), "after": after.get(p)}
            for p in sorted(set(before) | set(after))
            if before.get(p) != after.get(p)
        ]
        shown = data.draw(st.sampled_from([1, 2, queries.PRIZE_CHANGES_SHOWN]))
        assert queries._prize_changes(old, new, shown=shown) == {
            "prizes_changed": len(changed),
            "prizes": changed[:shown],
        }
        transaction.set_rollback(True)


def _fee_corrected(support, external_id):
    """A cancelled incident whose snapshot the platform re-imported with e2's fee corrected."""
    incident = cancelled_incident(support, external_id=external_id)
    doc = snapshot_doc(
        external_id,
        starts_at=incident.tournament.starts_at,
        entry_fields={1: {"fee_paid": "2.00"}},
    )
    import_doc(support, doc=doc)
    return incident


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
    incident = _fee_corrected(support, "SC-ONCE")
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
    client.force_login(support)
    page = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    section = page.split('id="snapshot-changes"')[1].split("</dl>")[0]
    start = section.split("<dt>Start</dt>")[1].split("</dd>")[0]
    was, now = (f'<time datetime="{t:%Y-%m-%dT%H:%M:%SZ}"' for t in (started, later))
    assert was in start.split("→")[0] and now in start.split("→")[1]


def test_a_large_re_import_draws_the_page_first_and_fetches_its_differences_after(
    client, support, monkeypatch
):
    """Two versions larger than COMPARED_WHILE_DRAWN that nobody compared yet: the incident
    page is drawn without reading their entries, and its section is fetched after (htmx). That
    fetch keeps the comparison, so the page drawn again shows it itself. Without scripts, the
    section's link shows the whole page with it."""
    monkeypatch.setattr(queries, "COMPARED_WHILE_DRAWN", 3)
    incident = _fee_corrected(support, "SC-LATER")
    client.force_login(support)
    page_url = reverse("incident_detail", args=[incident.pk])
    section_url = reverse("incident_snapshot_changes", args=[incident.pk])
    entries = Entry._meta.db_table
    changed = "1 entry with a different amount (e2: fee paid)"

    with CaptureQueriesContext(connection) as drawn:
        page = client.get(page_url).content.decode()
    assert "v1 → v2" in page and "Comparing the two versions'" in page
    assert f'hx-get="{section_url}"' in page and changed not in page
    assert not any(entries in q["sql"] for q in drawn.captured_queries)

    section = client.get(section_url, headers={"HX-Request": "true"})
    assert section.headers["Vary"].count("HX-Request") == 1
    body = section.content.decode()
    assert changed in body and 'id="snapshot-changes-section"' in body
    assert "<html" not in body and "Comparing" not in body

    with CaptureQueriesContext(connection) as again:
        page = client.get(page_url).content.decode()
    assert changed in page and "Comparing" not in page
    assert not any(entries in q["sql"] for q in again.captured_queries)

    old = queries.snapshot_at_recording(incident)
    new = Snapshot.objects.get(tournament=incident.tournament, version=2)
    cache.delete(queries.changes_key(old, new))
    whole = client.get(section_url).content.decode()
    assert f"Incident {incident.pk}" in whole and changed in whole and "Comparing" not in whole


def test_a_small_re_import_is_compared_while_the_page_is_drawn(client, support):
    incident = _fee_corrected(support, "SC-SMALL")
    client.force_login(support)
    page = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    assert "1 entry with a different amount (e2: fee paid)" in page and "Comparing" not in page


def test_a_re_import_that_changes_many_prizes_lists_the_first_and_counts_them_all(
    client, support, monkeypatch
):
    """A platform that corrects the whole prize table changes thousands of paid places: the
    incident page lists the first PRIZE_CHANGES_SHOWN and says how many changed in all."""
    monkeypatch.setattr(queries, "PRIZE_CHANGES_SHOWN", 2)
    incident = cancelled_incident(support, external_id="SC-PRIZES")
    prizes = [{"place": 1, "amount": "510.00"}, {"place": 2, "amount": "290.00"},
              {"place": 3, "amount": "210.00"}]  # fmt: skip
    import_doc(
        support,
        doc=snapshot_doc("SC-PRIZES", starts_at=incident.tournament.starts_at, prizes=prizes),
    )
    client.force_login(support)
    page = client.get(reverse("incident_detail", args=[incident.pk])).content.decode()
    listed = page.split('id="snapshot-prize-changes">')[1].split("</dd>")[0]
    assert "place 1: USD 500.00 → <strong>USD 510.00</strong>" in listed
    assert "place 2:" in listed and "place 3:" not in listed
    assert "… (3 places in all:" in listed
