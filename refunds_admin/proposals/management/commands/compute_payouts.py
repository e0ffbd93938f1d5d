"""manage.py compute_payouts FILE: the engine on one snapshot file, no database involved.

Prints the payout-proposal/1 JSON on stdout and exits 0; a refused snapshot exits 1 with every
reason on stderr and nothing on stdout. --explain ENTRY_ID prints that entry's statement instead.
"""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from refunds_admin.payouts import SnapshotError, compute_proposal, parse_snapshot
from refunds_admin.payouts import explain as explain_entry


class Command(BaseCommand):
    help = "Compute the payout proposal for a tournament-snapshot/1 file (FILE, or - for stdin)."
    requires_system_checks = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("file", help="snapshot JSON file, or - to read stdin")
        parser.add_argument("--explain", metavar="ENTRY_ID", help="print this entry's statement")

    def handle(self, *args, file, explain=None, **options):
        raw = sys.stdin.buffer.read() if file == "-" else _read(file)
        try:
            proposal = compute_proposal(parse_snapshot(raw))
        except SnapshotError as exc:
            count = len(exc.problems) + exc.more
            lines = [
                f"refused: the snapshot cannot be used ({count} problem{'s' if count != 1 else ''})"
            ]
            lines += [f"  {p}" for p in exc.problems]
            if exc.more:
                lines.append(f"  and {exc.more} more")
            self.stderr.write("\n".join(lines))
            sys.exit(1)
        if explain is not None:
            try:
                self.stdout.write(explain_entry(proposal, explain))
            except KeyError:
                raise CommandError(f"no entry {explain!r} in this snapshot") from None
            return
        write_proposal_json(proposal, sys.stdout)


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None


def write_proposal_json(proposal, out):
    """Write the proposal JSON with one line per entry: readable, and fast for 250k entries."""
    doc = proposal.to_json()
    lines = doc.pop("lines")
    head = json.dumps(doc, indent=1)
    out.write(head[:-2] + ',\n "lines": [\n')
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    out.write(",\n".join("  " + dumps(ln) for ln in lines))
    out.write("\n ]\n}\n")
