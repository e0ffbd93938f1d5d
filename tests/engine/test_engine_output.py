"""compute_payouts writes the proposal JSON from the columns: the same bytes as orjson's
OPT_INDENT_2 of the document built dict by dict, whatever the ids hold."""

import hashlib
import io
import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refunds_admin.payouts import SnapshotError, compute_proposal, parse_policy, parse_snapshot
from refunds_admin.payouts.cli import write_proposal_json
from refunds_admin.payouts.rules import (
    Proposal,
    fingerprint_columns,
    fingerprint_header,
    fingerprint_lines,
    line_json,
)
from tests.support.factories import EXAMPLES, example
from tests.support.formats import format_snapshots, policies
from tests.support.strategies import computed, snapshots

NAMES = sorted(p.name.removesuffix(".scenario.json") for p in EXAMPLES.glob("*.scenario.json"))


def reference(proposal: Proposal, fingerprint: bool) -> str:
    """What the command printed before it wrote lines itself: a dict per line, serialised by orjson."""
    doc = proposal.to_json(with_lines=False, with_fingerprint=fingerprint)
    doc["lines"] = [line_json(ln) for ln in proposal.lines]
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE).decode()


def written(proposal: Proposal, fingerprint: bool = False) -> str:
    out = io.StringIO()
    write_proposal_json(proposal, out, fingerprint=fingerprint)
    return out.getvalue()


@pytest.mark.parametrize("fingerprint", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_it_writes_each_example_as_orjson_would(name, fingerprint):
    scenario, expected = example(name)
    if "error" in expected:
        return
    proposal = compute_proposal(parse_snapshot(scenario))
    assert written(proposal, fingerprint) == reference(proposal, fingerprint)


def test_it_writes_the_same_bytes_to_stdout(monkeypatch):
    scenario, _ = example("05-first-place-cap")
    proposal = compute_proposal(parse_snapshot(scenario))
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stdout)
    write_proposal_json(proposal, stdout)
    assert raw.getvalue().decode() == reference(proposal, False)


def test_it_writes_a_proposal_without_lines():
    proposal = Proposal("T-1", "", "USD", "full_refund", 0, False)  # type: ignore[arg-type]
    assert written(proposal) == reference(proposal, False)


ODD_IDS = st.sampled_from(['say "hi"', "back\\slash", "é", "\u2028", "日本", "a/b", "\U0001f600"])


@settings(max_examples=100, deadline=None)
@given(snapshots(), st.data())
def test_it_escapes_ids_as_orjson_does(doc, data):
    """Quotes and backslashes are allowed in ids and must be escaped; other characters are
    written as they are (orjson writes UTF-8, not \\u escapes)."""
    for e in doc["entries"]:
        if data.draw(st.booleans()):
            e["entry_id"] += data.draw(ODD_IDS)
        if data.draw(st.booleans()):
            e["player_id"] += data.draw(ODD_IDS)
    proposal = computed(doc)
    if proposal is None:
        return
    fingerprint = data.draw(st.booleans())
    assert written(proposal, fingerprint) == reference(proposal, fingerprint)


def reference_fingerprint(external_id, currency, rule, rows):
    """The fingerprint as it was first computed (str.format per line)."""
    h = hashlib.sha256(fingerprint_header(external_id, currency, rule).encode())
    for entry_id, player_id, *amounts in rows:
        h.update(
            "{}:{}{}:{}{},{},{},{},{}\n".format(
                len(entry_id), entry_id, len(player_id), player_id, *amounts
            ).encode()
        )
    return h.hexdigest()


ROWS = st.lists(
    st.tuples(
        st.text(min_size=1, max_size=8),
        st.text(min_size=1, max_size=8),
        *[st.integers(0, 10**15)] * 5,
    ),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=8), ROWS)
def test_it_fingerprints_the_canonical_text_as_before(external_id, rows):
    """Stored fingerprints stay valid: the same canonical text, byte for byte, from rows (the
    stored lines) and from the proposal's columns."""
    expected = reference_fingerprint(external_id, "USD", "in_the_money", rows)
    assert fingerprint_lines(external_id, "USD", "in_the_money", iter(rows)) == expected
    columns = tuple(map(list, zip(*rows))) if rows else ([],) * 7
    assert fingerprint_columns(external_id, "USD", "in_the_money", columns) == expected


def test_it_fingerprints_more_lines_than_a_chunk_as_before():
    rows = [(f"e{i}", f"p{i}", i, 0, i * 7, 300, i * 8 + 300) for i in range(40_000)]
    expected = reference_fingerprint("T", "EUR", "full_refund", rows)
    assert fingerprint_lines("T", "EUR", "full_refund", rows) == expected
    assert fingerprint_columns("T", "EUR", "full_refund", tuple(map(list, zip(*rows)))) == expected


def test_the_command_prints_everything_before_it_ends_the_process():
    """manage.py compute_payouts leaves with os._exit once the output is flushed: all of it."""
    import subprocess

    path = EXAMPLES / "05-first-place-cap.scenario.json"
    res = subprocess.run(
        [sys.executable, "manage.py", "compute_payouts", str(path), "--fingerprint"],
        capture_output=True,
    )
    assert res.returncode == 0 and res.stderr == b""
    scenario, _ = example("05-first-place-cap")
    assert res.stdout.decode() == reference(compute_proposal(parse_snapshot(scenario)), True)


@settings(max_examples=100, deadline=None)
@given(format_snapshots(), policies())
def test_it_writes_any_policy_and_format_as_orjson_would(doc, policy_doc):
    """Equal shares, bounties and refunds in the form paid: the same bytes as line_json."""
    try:
        proposal = compute_proposal(parse_snapshot(doc), policy=parse_policy(policy_doc))
    except SnapshotError:
        return
    assert written(proposal) == reference(proposal, False)
    assert written(proposal, True) == reference(proposal, True)
