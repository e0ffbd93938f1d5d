"""The payout engine: the cancellation policy applied to a snapshot, exactly, to the cent.

Pure Python: no Django, no I/O, no floats. The command line, the preview, the stored proposal
and the API all call these same functions.
"""

from ._gc import paused_gc
from .rules import (
    FULL_REFUND,
    IN_THE_MONEY,
    NOT_IN_THE_MONEY,
    RULES,
    Proposal,
    compute_proposal,
    select_rule,
)
from .snapshot import Problem, Snapshot, SnapshotError, parse_snapshot, parse_timestamp
from .statement import explain, statement_lines

__all__ = [
    "FULL_REFUND",
    "IN_THE_MONEY",
    "NOT_IN_THE_MONEY",
    "RULES",
    "Problem",
    "Proposal",
    "Snapshot",
    "SnapshotError",
    "compute_proposal",
    "explain",
    "parse_snapshot",
    "parse_timestamp",
    "paused_gc",
    "select_rule",
    "statement_lines",
]
