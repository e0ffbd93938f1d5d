"""The tournament, outage, audit and player lists page through every row (keyset paging,
web/paging.py): each row is seen exactly once walking forward or backward, rows that tie on the
sorted column included; every column sorts both ways; the filters stay in the links; "Showing
1-3 of 7" counts what the filter finds; a damaged cursor or an unknown sort shows the first
page with a notice, never an error; and a page costs the same number of queries whatever the
number of rows.

The pages are 3 rows long here (PAGE_SIZE patched), so a handful of rows makes several pages."""

import html
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from refunds_admin.web import paging
from tests.support.factories import import_doc, outage, snapshot_doc

STARTS = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _three_a_page(monkeypatch):
    monkeypatch.setattr(paging, "PAGE_SIZE", 3)


def _links(page):
    return {
        rel: html.unescape(m.group(1))
        for rel in ("next", "prev")
        if (m := re.search(rf'<a href="(\?[^"]*)" rel="{rel}"', page))
    }


def _last(page):
    m = re.search(r'<a href="(\?[^"]*)"[^>]*>Last</a>', page)
    return html.unescape(m.group(1)) if m else None


def _get(client, url, query=""):
    response = client.get(url + query)
    assert response.status_code == 200
    return response.content.decode()


def walk(client, url, query, ids):
    """Every row of the list in order: forward through the "Next" links from `query`, and
    backward from the "Last" page through the "Previous" links (the same rows, the same order).
    `ids(page)` reads the rows of one page."""
    page = _get(client, url, query)
    first = page
    forward = list(ids(page))
    while "next" in _links(page):
        assert len(ids(page)) == 3  # a full page before each "Next"
        assert len(forward) <= 60, "the pages never end"
        page = _get(client, url, _links(page)["next"])
        forward += ids(page)
    pages = [ids(first)]
    last = _last(first)
    if last:
        page = _get(client, url, last)
        pages = [ids(page)]
        while "prev" in _links(page):
            assert len(pages) <= 20, "the pages never end"
            page = _get(client, url, _links(page)["prev"])
            pages.insert(0, ids(page))
    backward = [row for rows in pages for row in rows]
    assert forward == backward
    assert len(set(forward)) == len(forward), "a row shown twice"
    return forward


# --------------------------------------------------------------------------------------------
# Tournaments: 8 of them, starting at three times and with three entry counts (ties)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def tournaments(support, time_machine):
    time_machine.move_to(STARTS + timedelta(hours=3), tick=False)
    made = {}
    for i in range(8):
        ext = f"{'KEEP' if i % 2 else 'OTHER'}-{i}"
        doc = snapshot_doc(
            ext, starts_at=STARTS + timedelta(minutes=10 * (i % 3)), eliminated=2 + i % 3
        )
        made[ext] = import_doc(support, doc).tournament
    return made


def tournament_ids(page):
    table = page.split('id="tournaments"')[1].split("</table>")[0]
    return re.findall(r'href="/tournaments/\d+/">([A-Z]+-\d+)</a>', table)


def test_the_tournament_list_shows_every_tournament_once_in_both_directions(
    client, support, tournaments
):
    client.force_login(support)
    url = reverse("tournament_list")
    page = _get(client, url)
    assert "Showing 1-3 of 8 tournaments" in page
    seen = walk(client, url, "", tournament_ids)
    # Newest start first, and the ties on the start in one order: the newest import first.
    by_start = sorted(tournaments.values(), key=lambda t: (t.starts_at, t.pk), reverse=True)
    assert seen == [t.external_id for t in by_start]
    second = _get(client, url, _links(page)["next"])
    assert "Showing 4-6 of 8 tournaments" in second
    assert "Showing 7-8 of 8 tournaments" in _get(client, url, _links(second)["next"])
    # Backward from the last page: the pages end where the list ends, and start at its start.
    last = _get(client, url, _last(page))
    assert "Showing 6-8 of 8 tournaments" in last and "next" not in _links(last)
    before = _get(client, url, _links(last)["prev"])
    assert "Showing 3-5 of 8 tournaments" in before
    start = _get(client, url, _links(before)["prev"])
    assert "Showing 1-2 of 8 tournaments" in start and "prev" not in _links(start)


TOURNAMENT_SORTS = {
    "entries": lambda t: (t.current_snapshot.entries_count, t.pk),
    "started": lambda t: (t.starts_at, t.pk),
    "tournament": lambda t: (t.external_id, t.pk),
    "buy_in": lambda t: (t.buy_in_cents, t.fee_cents, t.pk),
    "snapshot": lambda t: (t.current_snapshot.version, t.pk),
}


def test_each_tournament_column_sorts_both_ways(client, support, tournaments):
    client.force_login(support)
    url = reverse("tournament_list")
    for sort, key in TOURNAMENT_SORTS.items():
        expected = [t.external_id for t in sorted(tournaments.values(), key=key)]
        assert walk(client, url, f"?sort={sort}", tournament_ids) == expected, sort
        assert walk(client, url, f"?sort=-{sort}", tournament_ids) == expected[::-1], sort
        _assert_header_flips(_get(client, url, f"?sort={sort}"), sort)


def _assert_header_flips(page, sort):
    header = re.search(
        r'<th scope="col"[^>]*aria-sort="ascending"><a class="sort" href="([^"]*)"', page
    )
    assert header and html.unescape(header.group(1)).endswith(f"sort=-{sort}")  # click: flip
    assert page.count('aria-sort="ascending"') == 1 and 'aria-sort="descending"' not in page


def test_the_search_stays_in_every_link_and_the_count_is_of_what_it_found(
    client, support, tournaments
):
    client.force_login(support)
    url = reverse("tournament_list")
    page = _get(client, url, "?q=keep&sort=entries")
    assert "Showing 1-3 of 4 tournaments" in page
    assert "q=keep" in _links(page)["next"] and "sort=entries" in _links(page)["next"]
    seen = walk(client, url, "?q=keep&sort=entries", tournament_ids)
    assert sorted(seen) == ["KEEP-1", "KEEP-3", "KEEP-5", "KEEP-7"]
    # The search form keeps the sort, the column headers keep the search.
    assert '<input type="hidden" name="sort" value="entries">' in page
    assert re.search(r'aria-sort="none"><a class="sort" href="\?q=keep&amp;sort=-started"', page)


@pytest.mark.parametrize(
    "query",
    [
        "?cursor=not-a-cursor",
        "?cursor=",
        "?cursor=%00%ff",
        "?sort=nonsense",
        "?sort=-",
        "?sort=status",  # shown, but not a sortable column
    ],
)
def test_a_damaged_cursor_or_an_unknown_sort_shows_the_first_page(
    client, support, tournaments, query
):
    client.force_login(support)
    page = _get(client, reverse("tournament_list"), query)
    assert "Showing 1-3 of 8 tournaments" in page
    assert tournament_ids(page) == tournament_ids(_get(client, reverse("tournament_list")))
    if query != "?cursor=":
        assert 'id="paging-notice"' in page


def test_a_cursor_is_signed_and_only_good_for_its_own_sort(client, support, tournaments):
    client.force_login(support)
    url = reverse("tournament_list")
    page = _get(client, url, "?sort=entries")
    cursor = re.search(r"cursor=([^&]+)", _links(page)["next"]).group(1)
    for query in (f"?sort=-entries&cursor={cursor}", f"?sort=entries&cursor={cursor[:-2]}xx"):
        other = _get(client, url, query)
        assert "That page link is out of date or damaged: here is the first page." in other
        assert "Showing 1-3 of 8 tournaments" in other


def test_a_tournament_page_costs_the_same_queries_for_3_rows_as_for_all(
    client, support, tournaments, monkeypatch, django_assert_max_num_queries
):
    client.force_login(support)
    url = reverse("tournament_list")
    page = _get(client, url)
    with CaptureQueriesContext(connection) as three:
        _get(client, url, _links(page)["next"])  # past the first page
    monkeypatch.setattr(paging, "PAGE_SIZE", 50)
    with django_assert_max_num_queries(len(three)):
        assert len(tournament_ids(_get(client, url, _links(page)["next"]))) == 5


# --------------------------------------------------------------------------------------------
# Outages: 7 failing at the same moment (every one ties on the time)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def outages(support, time_machine):
    time_machine.move_to(STARTS + timedelta(hours=3), tick=False)
    return [
        outage(support, external_ids=[f"OUT-{i}-{j}" for j in range(1 + i % 2)]) for i in range(7)
    ]


def outage_ids(page):
    return [int(x) for x in re.findall(r">Outage (\d+)</a>", page)]


OUTAGE_SORTS = {
    "failed": lambda o: (o.failed_at, o.pk),
    "outage": lambda o: o.pk,
    "tournaments": lambda o: (o.members.count(), o.pk),
    "cause": lambda o: (o.cause, o.pk),
    "site_wide": lambda o: (o.site_wide_issue, o.pk),
    "recorded_by": lambda o: (o.recorded_by.username, o.pk),
}


def test_the_outage_list_pages_and_sorts_both_ways(client, support, outages):
    client.force_login(support)
    url = reverse("outage_list")
    for sort, key in OUTAGE_SORTS.items():
        expected = [o.pk for o in sorted(outages, key=key)]
        assert walk(client, url, f"?sort={sort}", outage_ids) == expected, sort
        assert walk(client, url, f"?sort=-{sort}", outage_ids) == expected[::-1], sort
        assert "Showing 1-3 of 7 outages" in _get(client, url, f"?sort={sort}")
        _assert_header_flips(_get(client, url, f"?sort={sort}"), sort)


def test_the_outage_list_is_newest_first_and_its_queries_do_not_grow(
    client, support, outages, monkeypatch, django_assert_max_num_queries
):
    client.force_login(support)
    url = reverse("outage_list")
    assert walk(client, url, "", outage_ids) == sorted((o.pk for o in outages), reverse=True)
    page = _get(client, url)
    with CaptureQueriesContext(connection) as three:
        _get(client, url, _links(page)["next"])
    monkeypatch.setattr(paging, "PAGE_SIZE", 50)
    with django_assert_max_num_queries(len(three)):
        assert len(outage_ids(_get(client, url, _links(page)["next"]))) == 4


# --------------------------------------------------------------------------------------------
# Audit: 8 imports at one frozen instant (every event ties on its time), filtered by action
# --------------------------------------------------------------------------------------------


def event_ids(page):
    return [int(x) for x in re.findall(r'<tr id="event-(\d+)">', page)]


def test_the_audit_history_pages_through_every_event_with_its_filters(
    client, auditor, tournaments, django_assert_max_num_queries, monkeypatch
):
    from refunds_admin.audit.models import AuditEvent

    client.force_login(auditor)
    url = reverse("audit")
    imported = AuditEvent.objects.filter(action="snapshot.imported")
    assert imported.count() == 8 and len({e.created_at for e in imported}) == 1  # all tie
    query = "?action=snapshot."
    page = _get(client, url, query)
    assert "Showing 1-3 of 8 events" in page
    assert "action=snapshot." in _links(page)["next"]
    newest = [e.pk for e in imported.order_by("-created_at", "-pk")]
    assert walk(client, url, query, event_ids) == newest
    for sort, fields in [
        ("tournament", ("tournament_external_id",)),
        ("object", ("object_type", "object_id")),
        ("what", ("action",)),
        ("when", ("created_at",)),
    ]:
        expected = [e.pk for e in imported.order_by(*fields, "pk")]
        assert walk(client, url, f"{query}&sort={sort}", event_ids) == expected
        assert walk(client, url, f"{query}&sort=-{sort}", event_ids) == expected[::-1]
    # Every event, not only the imports: more rows, the same number of queries per page.
    everything = AuditEvent.objects.count()
    assert walk(client, url, "", event_ids) == [
        e.pk for e in AuditEvent.objects.order_by("-created_at", "-pk")
    ]
    with CaptureQueriesContext(connection) as three:
        _get(client, url, _links(_get(client, url))["next"])
    monkeypatch.setattr(paging, "PAGE_SIZE", 1000)
    with django_assert_max_num_queries(len(three)):
        assert len(event_ids(_get(client, url))) == everything


def test_the_audit_pager_asks_htmx_for_the_events_and_keeps_the_address(
    client, auditor, tournaments
):
    client.force_login(auditor)
    url = reverse("audit")
    part = client.get(url, {"action": "snapshot."}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="events")
    body = part.content.decode()
    assert body.lstrip().startswith('<div id="events">')
    assert "Showing 1-3 of 8 events" in body
    nxt = re.search(r'rel="next" hx-get="([^"]*)" hx-target="#events"[^>]*hx-push-url="true"', body)
    assert nxt and "action=snapshot." in html.unescape(nxt.group(1))
    assert re.search(r'<a class="sort" href="[^"]*" hx-get="[^"]*" hx-target="#events"', body)
    # The filter form sends the sort chosen in the events part (form="audit-filters").
    assert '<input type="hidden" name="sort" value="-when" form="audit-filters">' in body


# --------------------------------------------------------------------------------------------
# Player lookup: 10 players "fish1".."fish10", in 3, 2 or 1 tournaments (ties on the count)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def fish(support, time_machine):
    time_machine.move_to(STARTS + timedelta(hours=3), tick=False)
    names = {i: {"screen_name": f"fish{i + 1}"} for i in range(10)}
    for ext, eliminated in (("FISH-A", 6), ("FISH-B", 2), ("FISH-C", 0)):
        import_doc(
            support,
            snapshot_doc(
                ext,
                starts_at=STARTS,
                eliminated=eliminated,
                entry_fields={i: f for i, f in names.items() if i < 4 + eliminated},
            ),
        )
    # p1..p4 played all three, p5 and p6 two, p7..p10 one.
    return {f"p{i}": 3 if i <= 4 else 2 if i <= 6 else 1 for i in range(1, 11)}


def player_ids(page):
    if 'id="matches"' not in page:
        return []
    return re.findall(r"player=(p\d+)\">", page.split('id="matches"')[1])


def test_the_player_lookup_pages_every_player_found_and_sorts_by_tournaments(
    client, support, fish, monkeypatch, django_assert_max_num_queries
):
    client.force_login(support)
    url = reverse("player_lookup")
    page = _get(client, url, "?q=FISH")
    assert "10 players found" in page and "Showing 1-3 of 10 players" in page
    assert "q=FISH" in _links(page)["next"]
    assert walk(client, url, "?q=FISH", player_ids) == sorted(fish)
    assert walk(client, url, "?q=FISH&sort=-player", player_ids) == sorted(fish, reverse=True)
    by_count = sorted(fish, key=lambda p: (fish[p], p))
    assert walk(client, url, "?q=FISH&sort=tournaments", player_ids) == by_count
    assert walk(client, url, "?q=FISH&sort=-tournaments", player_ids) == by_count[::-1]
    # The narrower search counts only what it finds; a single match opens the player.
    assert "Showing 1-2 of 2 players" in _get(client, url, "?q=fish1")  # fish1, fish10
    assert "<h2>Player p7</h2>" in _get(client, url, "?q=fish7")
    with CaptureQueriesContext(connection) as three:
        _get(client, url, _links(page)["next"])
    monkeypatch.setattr(paging, "PAGE_SIZE", 50)
    with django_assert_max_num_queries(len(three)):
        assert len(player_ids(_get(client, url, _links(page)["next"]))) == 7
