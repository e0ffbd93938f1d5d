"""The duplicate-key check counts ':' without serialising the entries again: the
count worked out from the bulk path's columns must be exactly what orjson would write."""

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refunds_admin.payouts import SnapshotError, parse_snapshot
from refunds_admin.payouts.snapshot import _bulk_entries, _entry_colons, _keys_of
from tests.support.strategies import snapshots

TEXTS = st.text(alphabet=st.sampled_from(["a", ":", " ", "é", '"', "\\", "日"]), max_size=6)
EMAILS = st.one_of(
    st.none(),
    st.just(""),
    st.just("a:b@example.com"),
    st.dictionaries(st.sampled_from(["k:", "x"]), st.just(":"), max_size=2),
    st.lists(st.just("::"), max_size=2),
    st.integers(-(10**6), 10**6),
)


@settings(deadline=None, max_examples=200)
@given(snapshots(), st.data())
def test_it_counts_the_entries_colons_as_orjson_writes_them(doc, data):
    for e in doc["entries"]:
        e["entry_id"] += data.draw(TEXTS)
        e["player_id"] += data.draw(TEXTS)
        if data.draw(st.booleans()):
            e["screen_name"] = data.draw(TEXTS)
        if data.draw(st.booleans()):
            e["email"] = data.draw(EMAILS)
    raw = doc["entries"]
    bulk = _bulk_entries(raw, 3000, 300, _keys_of(raw))
    if bulk is None:  # ids made equal or blank by the suffixes: the one-by-one path's case
        return
    _, in_texts = bulk
    assert _entry_colons(raw, _keys_of(raw), in_texts) == orjson.dumps(raw).count(b":")


def entries_text(extra):
    doc = {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": "T:1", "name": "10:00", "currency": "USD", "buy_in": "10.00",
            "fee": "1.00", "starts_at": "2026-11-29T18:00:00Z",
            "prizes": [{"place": 1, "amount": "15.00"}, {"place": 2, "amount": "5.00"}],
        },
        "entries": [
            {"entry_id": "e:1", "player_id": "p:1", "status": "active", "chips": 10},
            {"entry_id": "e:2", "player_id": "p:2", "status": "active", "chips": 20},
        ],
        "incident": {"failed_at": "2026-11-29T20:00:00Z"},
    }  # fmt: skip
    text = json.dumps(doc)
    assert '"chips": 10}' in text
    return text.replace('"chips": 10}', '"chips": 10' + extra + "}")


@pytest.mark.parametrize("as_bytes", [False, True])
@pytest.mark.parametrize(
    "extra, key",
    [
        (', "chips": 10', "chips"),  # the same value twice: the bulk path reads it happily
        (', "status": "active"', "status"),
        (', "screen_name": "a", "screen_name": "b:c"', "screen_name"),
    ],
)
def test_it_refuses_a_key_given_twice_in_an_entry_the_bulk_path_reads(extra, key, as_bytes):
    text = entries_text(extra)
    with pytest.raises(SnapshotError) as refused:
        parse_snapshot(text.encode() if as_bytes else text)
    assert f"key {key!r} twice" in str(refused.value)
    assert len(refused.value.problems) == 1


@pytest.mark.parametrize("as_bytes", [False, True])
def test_it_accepts_colons_in_ids_names_and_addresses(as_bytes):
    text = entries_text(', "screen_name": "a:b", "email": "x:y@example.com"')
    snapshot = parse_snapshot(text.encode() if as_bytes else text)
    assert snapshot.columns.entry_id == ["e:1", "e:2"]
    assert snapshot.emails == {"e:1": "x:y@example.com"}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"name": "\xc3\xa9t\xc3\xa9", "x": tru}',  # not JSON, after non-ASCII text
        b'{"a": "\xff"}',  # not UTF-8
        b'{"a": "\xed\xa0\x80"}',  # an encoded surrogate
        b"\xef\xbb\xbf{}",  # a byte order mark
        b"[1, 2]",
    ],
)
def test_it_says_the_same_of_bytes_as_of_their_text(raw):
    """Bytes go to orjson as they are; whatever is wrong is said as it was of the decoded text."""
    with pytest.raises(SnapshotError) as of_bytes:
        parse_snapshot(raw)
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        assert str(of_bytes.value) == f"document: is not UTF-8 text ({exc.reason})"
        return
    with pytest.raises(SnapshotError) as of_text:
        parse_snapshot(text)
    assert str(of_bytes.value) == str(of_text.value)
