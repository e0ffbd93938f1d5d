"""A proposal's fingerprint, in Python (the engine's) and in SQL (its twin), side by side.

The fingerprint is the SHA-256 of the proposal's canonical lines (payouts.rules): what a manager
approves, and what posting checks the stored lines against before paying them. The engine
computes it from its columns; posting computes it in the database from the stored PayoutLine
rows, so that no line leaves PostgreSQL. Both must produce the same bytes, so the SQL below is
built from the engine's own canonical line (its %-format string) and a list naming the column
each `%s` holds: the two cannot drift apart without this module refusing to load (`_concat`
counts the fields, `_REFUND_PART` is checked against the engine's refunds_text) or
tests/services/test_formats.py failing (it compares them byte for byte on PostgreSQL, on proposals with
every component).

Two canonical forms (payouts.rules):
- the legacy form, every proposal's before policies existed: five amounts a line; kept by a
  proposal under version 1 of the default policy with no equal share, no bounty and nothing
  returned otherwise than in cash, so that stored proposals keep their fingerprints;
- the policy form, every other proposal's: the header names the policy's SHA-256, and a line
  has the seven amounts and the refunds in the form paid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import connection

from refunds_admin.payouts import Payment, PolicyRef, rules

from .models import PayoutLine

if TYPE_CHECKING:
    from .models import PayoutProposal

LINES_TABLE = PayoutLine._meta.db_table

# ---------------------------------------------------------------------------------------------
# The two canonical lines: the engine's format strings, and what each %s holds, as a SQL
# expression over a PayoutLine row (in the order the engine's _canonical_lines gives them).
# ---------------------------------------------------------------------------------------------

LEGACY_LINE = rules._CANONICAL
LEGACY_LINE_SQL = (
    "length(entry_id)", "entry_id", "length(player_id)", "player_id",
    "buy_in_refund_cents", "next_prize_cents", "chip_equity_cents", "fee_refund_cents",
    "total_cents",
)  # fmt: skip
POLICY_LINE = rules._CANONICAL_POLICY

# One part of a line's refunds, as the engine's refunds_text writes it ("ticket:4300:5:TKT-1";
# no id for cash and tournament money), parts joined by ";" in the order of the list.
_REFUND_PART = "%s:%s:%s:%s"
_REFUND_SEPARATOR = ";"
_sample = (Payment("ticket", 4300, "TKT-1"), Payment("cash", 1, None))
if rules.refunds_text(_sample) != _REFUND_SEPARATOR.join(
    _REFUND_PART % (p.method, p.amount, len(p.ticket_id or ""), p.ticket_id or "") for p in _sample
):
    raise AssertionError("the engine's refunds_text changed: update proposals/fingerprint.py")
_REFUND_PART_SQL = (
    "p->>'method'", "p->>'amount_cents'", "length(coalesce(p->>'ticket_id', ''))",
    "coalesce(p->>'ticket_id', '')",
)  # fmt: skip


def _literal(text: str) -> str:
    """A PostgreSQL string literal for the separator text between two fields."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"E'{escaped}'"


def _concat(line_format: str, expressions: tuple[str, ...]) -> str:
    """SQL concat(...) writing `line_format % values` for the values of `expressions`."""
    pieces = line_format.split("%s")
    if "%" in line_format.replace("%s", "") or len(pieces) != len(expressions) + 1:
        raise AssertionError(
            f"the engine's canonical line {line_format!r} has {len(pieces) - 1} fields; the SQL "
            f"twin names {len(expressions)}: update proposals/fingerprint.py"
        )
    parts = []
    for piece, expression in zip(pieces, expressions, strict=False):
        if piece:
            parts.append(_literal(piece))
        parts.append(expression)
    if pieces[-1]:
        parts.append(_literal(pieces[-1]))
    return "concat(" + ", ".join(parts) + ")"


# The refunds of a line as text ("" when paid back all in cash): each part of the stored list
# (Entry.paid_with's layout: method, amount_cents, ticket_id) in its order.
_REFUNDS_SQL = (
    "coalesce((SELECT string_agg("
    f"{_concat(_REFUND_PART, _REFUND_PART_SQL)}, {_literal(_REFUND_SEPARATOR)} ORDER BY n) "
    "FROM jsonb_array_elements(refunds) WITH ORDINALITY AS r(p, n)), '')"
)


def _part_at(index: int) -> str:
    """The text of the refunds' part at `index`, without a subquery."""
    return _concat(
        _REFUND_PART, tuple(e.replace("p->>", f"refunds->{index}->>") for e in _REFUND_PART_SQL)
    )


# The same text without a subquery for lines of up to three parts (every line in practice: a
# subquery per line cost 0.4 s per 30k lines, docs/performance.md); the subquery for the rest.
_REFUNDS_INLINE_SQL = (
    "CASE WHEN refunds IS NULL THEN '' "
    + " ".join(
        f"WHEN jsonb_array_length(refunds) = {n} THEN concat("
        + f", {_literal(_REFUND_SEPARATOR)}, ".join(_part_at(i) for i in range(n))
        + ")"
        for n in (1, 2, 3)
    )
    + f" ELSE {_REFUNDS_SQL} END"
)
POLICY_LINE_SQL = (
    "length(entry_id)", "entry_id", "length(player_id)", "player_id",
    "buy_in_refund_cents", "next_prize_cents", "equal_share_cents", "chip_equity_cents",
    "fee_refund_cents", "bounty_refund_cents", "total_cents", _REFUNDS_INLINE_SQL,
)  # fmt: skip


def _digest(line_format: str, expressions: tuple[str, ...]) -> str:
    """The SQL aggregate over one proposal's PayoutLine rows whose value is the fingerprint
    (hex), the header given as the %(header)s parameter."""
    line = _concat(line_format, expressions)
    return (
        "encode(sha256(convert_to(%(header)s || coalesce(string_agg("
        f"{line}, '' ORDER BY position), ''), 'UTF8')), 'hex')"
    )


LEGACY_DIGEST_SQL = _digest(LEGACY_LINE, LEGACY_LINE_SQL)
POLICY_DIGEST_SQL = _digest(POLICY_LINE, POLICY_LINE_SQL)

# The PayoutLine fields the Python forms read, in the order the engine's functions take them.
LEGACY_FIELDS = (
    "entry_id", "player_id", "buy_in_refund_cents", "next_prize_cents", "chip_equity_cents",
    "fee_refund_cents", "total_cents",
)  # fmt: skip
POLICY_FIELDS = (
    "entry_id", "player_id", "buy_in_refund_cents", "next_prize_cents", "equal_share_cents",
    "chip_equity_cents", "fee_refund_cents", "bounty_refund_cents", "total_cents", "refunds",
)  # fmt: skip

# ---------------------------------------------------------------------------------------------
# Which form a stored proposal has
# ---------------------------------------------------------------------------------------------


def policy_of(proposal: PayoutProposal) -> PolicyRef:
    """The policy version a stored proposal was computed under, as the proposal records it
    (proposals stored before policies record version 1 of the default policy)."""
    return PolicyRef(proposal.policy_id, proposal.policy_version_number, proposal.policy_sha256)


def _lines_have_new_components(proposal: PayoutProposal) -> bool:
    return (
        PayoutLine.objects.filter(proposal_id=proposal.pk)
        .exclude(equal_share_cents=0, bounty_refund_cents=0, refunds__isnull=True)
        .exists()
    )


def has_legacy_form(proposal: PayoutProposal) -> bool:
    """The engine's Proposal.has_legacy_form, for the stored lines."""
    return policy_of(proposal) == rules.LEGACY_POLICY and not _lines_have_new_components(proposal)


def header(proposal: PayoutProposal, *, legacy: bool) -> str:
    """The canonical header of a stored proposal in the form it has."""
    external_id = proposal.incident.tournament.external_id
    if legacy:
        return rules.fingerprint_header(external_id, proposal.currency, proposal.rule)
    return rules.fingerprint_policy_header(
        external_id, proposal.currency, proposal.rule, policy_of(proposal).sha256
    )


def digest_sql(proposal: PayoutProposal) -> tuple[str, str]:
    """(the SQL aggregate, its %(header)s) computing this proposal's fingerprint from its
    stored lines (a statement over `FROM PayoutLine WHERE proposal_id = ...`)."""
    legacy = has_legacy_form(proposal)
    return (LEGACY_DIGEST_SQL if legacy else POLICY_DIGEST_SQL), header(proposal, legacy=legacy)


# ---------------------------------------------------------------------------------------------
# The fingerprint of the stored lines, either way
# ---------------------------------------------------------------------------------------------


def _as_payments(refunds):
    return (
        None
        if refunds is None
        else [Payment(p["method"], p["amount_cents"], p.get("ticket_id")) for p in refunds]
    )


def python_fingerprint(proposal: PayoutProposal) -> str:
    """The engine's fingerprint of the stored lines (SQL only to read them)."""
    external_id = proposal.incident.tournament.external_id
    lines = PayoutLine.objects.filter(proposal_id=proposal.pk).order_by("position")
    if has_legacy_form(proposal):
        rows = lines.values_list(*LEGACY_FIELDS).iterator(chunk_size=10_000)
        return rules.fingerprint_lines(external_id, proposal.currency, proposal.rule, rows)
    rows = (
        (*row[:-1], _as_payments(row[-1]))
        for row in lines.values_list(*POLICY_FIELDS).iterator(chunk_size=10_000)
    )
    return rules.fingerprint_policy_lines(
        external_id, proposal.currency, proposal.rule, policy_of(proposal).sha256, rows
    )


def sql_fingerprint(proposal: PayoutProposal) -> str:
    """The same fingerprint computed by PostgreSQL from the stored lines."""
    sql, head = digest_sql(proposal)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {sql} FROM {LINES_TABLE} WHERE proposal_id = %(proposal)s",
            {"header": head, "proposal": proposal.pk},
        )
        return cursor.fetchone()[0]


def stored_fingerprint(proposal: PayoutProposal) -> str:
    """The fingerprint of the stored lines: computed by PostgreSQL there, else in Python."""
    if connection.vendor == "postgresql":
        return sql_fingerprint(proposal)
    return python_fingerprint(proposal)
