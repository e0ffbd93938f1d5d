"""`manage.py compute_payouts FILE [--policy POLICY.json] [--explain ENTRY_ID]`: the engine on
one snapshot file, under the policy the snapshot names (a shipped preset, by id), the default
policy, or a policy file given with --policy (which wins over the snapshot's).

Prints the payout-proposal/1 JSON on stdout and exits 0; a refused snapshot exits 1 with every
reason on stderr and nothing on stdout. Pure like the rest of the engine: manage.py runs it
without setting up Django, which would cost more than computing 100k entries.
"""

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, islice, repeat
from typing import Any, Protocol, TextIO

import orjson

from ._gc import paused_gc
from .money import decimals_texts, format_cents, split_cents_column
from .policy import PRESETS, Policy, PolicyError, parse_policy
from .rules import LineColumns, Proposal, compute_proposal
from .snapshot import Payment, SnapshotError, parse_snapshot
from .statement import explain


class Writer(Protocol):
    """Where text goes: a file, sys.stdout, or a management command's output wrapper."""

    def write(self, text: str, /) -> object: ...


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="manage.py compute_payouts")
    parser.add_argument("file", help="snapshot JSON file, or - to read stdin")
    parser.add_argument(
        "--explain", metavar="ENTRY_ID", help="print this entry's statement instead"
    )
    parser.add_argument(
        "--policy",
        metavar="POLICY.json",
        help="compute under this cancellation-policy/1 file instead of the snapshot's policy",
    )
    parser.add_argument(
        "--fingerprint",
        action="store_true",
        help="add the SHA-256 fingerprint of the lines, as stored with proposals in the app",
    )
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: Writer | None = None,
    stderr: Writer | None = None,
) -> int:
    the_command = stdin is None and stdout is None and stderr is None
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    kept: list[object] = []
    # A short-lived process that builds a million small objects and no reference cycles: the
    # cyclic garbage collector would only walk the snapshot over and over. Called in-process
    # (the tests), the collector is back on as it was once the command is done.
    with paused_gc():
        code = run(
            args.file,
            args.explain,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            fingerprint=args.fingerprint,
            keep=kept,
            policy_file=args.policy,
        )
    if the_command:
        # The process ends here: the snapshot, the proposal and their million small objects go
        # with it, instead of being freed one by one (a tenth of a second for 100k entries).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def run(
    file: str,
    explain_entry: str | None,
    *,
    stdin: TextIO,
    stdout: Writer,
    stderr: Writer,
    fingerprint: bool = False,
    keep: list[object] | None = None,
    policy_file: str | None = None,
) -> int:
    """The command's work; `keep` receives what it read and computed (see main)."""
    if keep is None:
        keep = []
    policy: Policy | None = None
    if policy_file is not None:
        try:
            policy = parse_policy(_read(policy_file))
        except OSError as exc:
            stderr.write(f"refused: cannot read the policy {policy_file}: {exc.strerror}\n")
            return 2
        except PolicyError as exc:
            count = len(exc.problems)
            stderr.write(
                f"refused: the policy {policy_file} cannot be used "
                f"({count} problem{'s' if count != 1 else ''})\n"
            )
            for problem in exc.problems:
                stderr.write(f"  {problem}\n")
            return 1
    try:
        raw = stdin.buffer.read() if file == "-" else _read(file)
    except OSError as exc:
        stderr.write(f"refused: cannot read {file}: {exc.strerror}\n")
        return 2
    keep.append(raw)
    try:
        # A policy file wins over the snapshot's tournament.policy; otherwise that id must be
        # one of the shipped presets.
        known = None if policy is not None else PRESETS.keys()
        snapshot = parse_snapshot(raw, known_policies=known, keep=keep)
        keep.append(snapshot)
        proposal = compute_proposal(snapshot, policy=policy)
        keep.append(proposal)
    except SnapshotError as exc:
        count = len(exc.problems) + exc.more
        stderr.write(
            f"refused: the snapshot cannot be used ({count} problem{'s' if count != 1 else ''})\n"
        )
        for problem in exc.problems:
            stderr.write(f"  {problem}\n")
        if exc.more:
            stderr.write(f"  and {exc.more} more\n")
        if policy is None and any(p.field == "tournament.policy" for p in exc.problems):
            # Without the database the command line knows only the shipped presets: an
            # operator's own policy, approved in the app, is given as its document.
            stderr.write(
                "  (the command line knows only the shipped presets: compute under another "
                "policy with --policy POLICY.json, its cancellation-policy/1 document)\n"
            )
        return 1
    if explain_entry is not None:
        try:
            stdout.write(explain(proposal, explain_entry) + "\n")
        except KeyError:
            stderr.write(f"no entry {explain_entry!r} in this snapshot\n")
            return 2
        return 0
    write_proposal_json(proposal, stdout, fingerprint=fingerprint)
    return 0


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def write_proposal_json(proposal: Proposal, out: Writer, *, fingerprint: bool = False) -> None:
    """The proposal JSON with one line per entry: readable, and fast for 250k entries."""
    with paused_gc():
        _write_proposal_json(proposal, out, fingerprint)


def _write_proposal_json(proposal: Proposal, out: Writer, fingerprint: bool) -> None:
    # The same bytes as orjson.dumps(the document, OPT_INDENT_2) plus a newline, without a dict
    # per line: the head (everything but the lines) goes through orjson, and each line is one
    # %-format fed column by column (zip, map, % and join run in C). Written in chunks: a
    # 250k-line proposal is never one text in memory.
    doc = proposal.to_json(with_lines=False, with_fingerprint=fingerprint)
    doc["lines"] = []  # the last key: the lines go where its [] is
    head = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    del doc
    assert head.endswith(_EMPTY_LINES)
    parts: Iterable[str]
    if proposal.columns.entry_id:
        opened = head[: -len(_EMPTY_LINES)].decode()
        parts = chain((opened,), _line_chunks(proposal.columns), (_END,))
    else:
        parts = (head.decode(), "\n")
    buffer = getattr(out, "buffer", None)
    if buffer is not None and out is sys.stdout:
        out.flush()
        for part in parts:
            buffer.write(part.encode())  # bytes straight to the file: no second copy as str
        buffer.flush()
    else:
        out.write("".join(parts))  # one write: a command's output wrapper ends each with \n


def _line_chunks(c: LineColumns) -> Iterator[str]:
    """The lines' text, _CHUNK lines at a time.

    Each line is one %-format of a template (_LINE_START and the rest): the ids and the numbers that differ on every line go in
    as they are, and each field that repeats (the status, an amount that every entry gets, the
    decimals, the capped flag) comes with the fixed text around it from a small table.
    """
    n = len(c.entry_id)
    # The capped flag ends its line and opens the next one; the last line closes the list.
    capped_text = (f"false{_BETWEEN}", f"true{_BETWEEN}")
    ends: Iterable[str]
    if c.has_refunds:
        # A line returned in the form paid ends with its refunds, after the capped flag.
        ends = map(_line_end, c.capped, c.refunds, chain(repeat(_BETWEEN, n - 1), (_LINE_END,)))
    else:
        last = (f"false{_LINE_END}", f"true{_LINE_END}")[c.capped[-1]]
        ends = chain(map(capped_text.__getitem__, islice(c.capped, n - 1)), (last,))
    equity, equity_cents = split_cents_column(c.chip_equity)
    total, total_cents = split_cents_column(c.total)
    columns: list[Iterable[Any]] = [
        _json_strings(c.entry_id),
        _json_strings(c.player_id),
        map(_Texts(_status_text).__getitem__, c.status),
        c.chips,
        map(_Texts(_buy_in_refund_text).__getitem__, c.buy_in_refund),
    ]
    template = _LINE_START
    # A column every line has at 0.00 (no equal share, no bounty: most proposals) goes in as
    # part of the fixed text around it: the lines cost what they cost before these columns.
    if any(c.equal_share):
        columns.append(map(_Texts(_next_prize_text).__getitem__, c.next_prize))
        columns.append(map(_Texts(_equal_share_text).__getitem__, c.equal_share))
        template += "%s%s"
    else:
        columns.append(map(_Texts(_next_prize_no_equal_share_text).__getitem__, c.next_prize))
        template += "%s"
    columns += [equity, map(_EQUITY_DECIMALS.__getitem__, equity_cents)]
    template += "%d%s"
    if any(c.bounty_refund):
        bounty, bounty_cents = split_cents_column(c.bounty_refund)
        columns += [
            map(_Texts(_fee_refund_text).__getitem__, c.fee_refund),
            bounty,
            map(_BOUNTY_DECIMALS.__getitem__, bounty_cents),
        ]
        template += "%s%d%s"
    else:
        columns.append(map(_Texts(_fee_refund_no_bounty_text).__getitem__, c.fee_refund))
        template += "%s"
    columns += [total, map(_TOTAL_DECIMALS.__getitem__, total_cents), ends]
    template += "%d%s%s"
    lines = map(template.__mod__, zip(*columns))
    yield _LINES_START
    while chunk := "".join(islice(lines, _CHUNK)):
        yield chunk


class _Texts(dict[Any, str]):
    """value -> its text in a line, made once per distinct value: fees, refunds, next prizes and
    statuses repeat on every line."""

    def __init__(self, make: Callable[[Any], str]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, value: Any) -> str:
        text = self[value] = self.make(value)
        return text


# One line of the proposal as orjson's OPT_INDENT_2 writes it inside "lines" (two levels deep):
# the first line's opening is in _LINES_START, each next one's in the line before (_BETWEEN).
_LINES_START = '"lines": [\n    {\n      "entry_id": "'
_LINE_START = '%s",\n      "player_id": "%s%s%d%s'  # then next_prize ... (_line_chunks)
_LINE_END = "\n    }"
_BETWEEN = f'{_LINE_END},\n    {{\n      "entry_id": "'
_END = "\n  ]\n}\n"


def _status_text(status: str) -> str:
    return f'",\n      "status": "{_json_inner(status)}",\n      "chips": '


def _buy_in_refund_text(cents: int) -> str:
    return f',\n      "buy_in_refund": "{format_cents(cents)}",\n      "next_prize": "'


def _next_prize_text(cents: int) -> str:
    return f'{format_cents(cents)}",\n      "equal_share": "'


def _next_prize_no_equal_share_text(cents: int) -> str:
    return f'{format_cents(cents)}",\n      "equal_share": "0.00",\n      "chip_equity": "'


def _fee_refund_no_bounty_text(cents: int) -> str:
    return f'{format_cents(cents)}",\n      "bounty_refund": "0.00",\n      "total": "'


def _equal_share_text(cents: int) -> str:
    return f'{format_cents(cents)}",\n      "chip_equity": "'


def _fee_refund_text(cents: int) -> str:
    return f'{format_cents(cents)}",\n      "bounty_refund": "'


def _line_end(capped: bool, refunds: tuple[Payment, ...] | None, after: str) -> str:
    """The capped flag, the refunds where the line has them, and what follows the line."""
    flag = "true" if capped else "false"
    if refunds is None:
        return flag + after
    items = []
    for p in refunds:
        item = (
            f'\n        {{\n          "method": "{_json_inner(p.method)}",'
            f'\n          "amount": "{format_cents(p.amount)}"'
        )
        if p.ticket_id is not None:
            item += f',\n          "ticket_id": "{_json_inner(p.ticket_id)}"'
        items.append(item + "\n        }")
    return f'{flag},\n      "refunds": [{",".join(items)}\n      ]{after}'


# The chip equity and the total differ on every line: their whole units go in as %d, their
# decimals with what follows them.
_EQUITY_DECIMALS = decimals_texts('",\n      "fee_refund": "')
_BOUNTY_DECIMALS = decimals_texts('",\n      "total": "')
_TOTAL_DECIMALS = decimals_texts('",\n      "capped": ')
_EMPTY_LINES = b'"lines": []\n}'
_CHUNK = 1024  # lines: a chunk (300 kB) stays in the L2 cache while it is joined and encoded


def _json_strings(column: list[str]) -> Iterable[str]:
    """The column's strings as they appear between the quotes of a JSON string."""
    text = "".join(column)
    # Ids never hold a control character (the snapshot is refused: isprintable() is false for
    # every one), but a quote or a backslash is allowed and is escaped.
    if text.isprintable() and '"' not in text and "\\" not in text:
        return column
    return map(_json_inner, column)


def _json_inner(text: str) -> str:
    """`text` as it appears between the quotes of a JSON string (as orjson escapes it)."""
    return orjson.dumps(text).decode()[1:-1]


if __name__ == "__main__":
    sys.exit(main())
