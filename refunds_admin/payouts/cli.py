"""`manage.py compute_payouts FILE [--explain ENTRY_ID]`: the engine on one snapshot file.

Prints the payout-proposal/1 JSON on stdout and exits 0; a refused snapshot exits 1 with every
reason on stderr and nothing on stdout. Pure like the rest of the engine: manage.py runs it
without setting up Django, which would cost more than computing 100k entries.
"""

import argparse
import gc
import sys
from collections.abc import Sequence
from typing import Protocol, TextIO

import orjson

from ._gc import paused_gc
from .money import format_cents, format_cents_column
from .rules import Proposal, compute_proposal
from .snapshot import SnapshotError, parse_snapshot
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
    # A short-lived process that builds a million small objects and no reference cycles: the
    # cyclic garbage collector would only walk the snapshot over and over.
    gc.disable()
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    return run(
        args.file,
        args.explain,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        fingerprint=args.fingerprint,
    )


def run(
    file: str,
    explain_entry: str | None,
    *,
    stdin: TextIO,
    stdout: Writer,
    stderr: Writer,
    fingerprint: bool = False,
) -> int:
    try:
        raw = stdin.buffer.read() if file == "-" else _read(file)
    except OSError as exc:
        stderr.write(f"refused: cannot read {file}: {exc.strerror}\n")
        return 2
    try:
        proposal = compute_proposal(parse_snapshot(raw))
    except SnapshotError as exc:
        count = len(exc.problems) + exc.more
        stderr.write(
            f"refused: the snapshot cannot be used ({count} problem{'s' if count != 1 else ''})\n"
        )
        for problem in exc.problems:
            stderr.write(f"  {problem}\n")
        if exc.more:
            stderr.write(f"  and {exc.more} more\n")
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
    # One pass over the columns builds one small dict per line, and orjson serialises the whole
    # document in C: a 250k-line proposal costs a fraction of a second instead of a second of
    # per-line string formatting. The same document as `Proposal.to_json()`, amounts as strings.
    doc = proposal.to_json(with_lines=False, with_fingerprint=fingerprint)
    c = proposal.columns
    amounts = _CentsText()
    doc["lines"] = [
        {
            "entry_id": entry_id,
            "player_id": player_id,
            "status": status,
            "chips": chips,
            "buy_in_refund": buy_in,
            "next_prize": next_prize,
            "chip_equity": equity,
            "fee_refund": fee,
            "total": total,
            "capped": capped,
        }  # fmt: skip
        for entry_id, player_id, status, chips, buy_in, next_prize, equity, fee, total, capped in zip(
            c.entry_id,
            c.player_id,
            c.status,
            c.chips,
            map(amounts.__getitem__, c.buy_in_refund),
            map(amounts.__getitem__, c.next_prize),
            format_cents_column(c.chip_equity),
            map(amounts.__getitem__, c.fee_refund),
            format_cents_column(c.total),
            c.capped,
        )  # fmt: skip
    ]
    text = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    del doc
    buffer = getattr(out, "buffer", None)
    if buffer is not None and out is sys.stdout:
        out.flush()
        buffer.write(text)  # the bytes as they are: no second copy as str
        buffer.flush()
    else:
        out.write(text.decode())


class _CentsText(dict[int, str]):
    """Cents -> "815.33", remembered: fees, refunds and next prizes repeat on every line."""

    def __missing__(self, cents: int) -> str:
        text = self[cents] = format_cents(cents)
        return text


if __name__ == "__main__":
    sys.exit(main())
