"""The payout engine: the cancellation policy applied to a snapshot, exactly, to the cent.

Pure Python: no Django, no I/O, no floats. The command line, the preview, the stored proposal
and the API all call these same functions.
"""

from ._gc import paused_gc
from .policy import (
    DEFAULT_POLICY_ID,
    PRESETS,
    Policy,
    PolicyError,
    PolicyRef,
    default_policy,
    parse_policy,
)
from .rules import (
    FULL_REFUND,
    IN_THE_MONEY,
    NOT_IN_THE_MONEY,
    RULES,
    Proposal,
    compute_proposal,
    full_refund_reason,
    policy_for,
    select_rule,
)
from .snapshot import (
    Payment,
    Problem,
    Snapshot,
    SnapshotError,
    parse_snapshot,
    parse_timestamp,
)
from .statement import explain, statement_lines

__all__ = [
    "DEFAULT_POLICY_ID",
    "FULL_REFUND",
    "IN_THE_MONEY",
    "NOT_IN_THE_MONEY",
    "PRESETS",
    "RULES",
    "Payment",
    "Policy",
    "PolicyError",
    "PolicyRef",
    "Problem",
    "Proposal",
    "Snapshot",
    "SnapshotError",
    "compute_proposal",
    "default_policy",
    "explain",
    "full_refund_reason",
    "parse_policy",
    "parse_snapshot",
    "parse_timestamp",
    "paused_gc",
    "policy_for",
    "select_rule",
    "statement_lines",
]
