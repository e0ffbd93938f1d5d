"""Turning approved lines into credits, a chunk at a time, skipping credits already booked.

On PostgreSQL one statement per chunk books the credits straight from the proposal's lines:
`INSERT ... SELECT`, so no line travels to Python and back (even COPY through a staging table
would first have to read the lines out); a chunk of which some credits are booked already is
booked again with `ON CONFLICT (key) DO NOTHING`. Elsewhere (SQLite in development) the same
is done in Python with `bulk_create(ignore_conflicts=True)`. Both paths build the same keys
(`credit_key`) and the same fingerprint of the lines; tests run both.
"""

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from refunds_admin.db.keys import (
    credit_key,
    credit_key_sql,
    key_part_sql,
    ticket_key,
    ticket_key_sql,
)
from refunds_admin.proposals import fingerprint
from refunds_admin.proposals.lines import SORT_MEMORY, sort_memory  # noqa: F401 (used by posting)
from refunds_admin.proposals.models import PayoutLine

from .models import COMPONENT_FIELDS, REFUND_COMPONENTS, Component, Credit, Method

_AMOUNT_FIELDS = [field for _, field in COMPONENT_FIELDS]
_LINE_FIELDS = ["position", "entry_id", "player_id", *_AMOUNT_FIELDS, "refunds"]
# Table names from the models, never spelled out in the SQL below (plain identifiers: Django's
# default names need no quoting).
_LINES_TABLE = PayoutLine._meta.db_table
_CREDITS_TABLE = Credit._meta.db_table


def _postgres():
    return connection.vendor == "postgresql"


# ---------------------------------------------------------------------------------------------
# The fingerprint of the stored lines: the engine's canonical fingerprint, so that "the lines
# still match what the manager approved" is checked against the very fingerprint quoted at
# approval, not a second scheme. Its SQL twin lives beside the Python form in
# proposals/fingerprint.py.
# ---------------------------------------------------------------------------------------------


# How many credits a line's `refunds` make (line_credits): one per method but tickets, one per
# ticket, whatever its value (a freeroll's seat ticket is worth 0.00 and still goes back).
_REFUND_CREDITS_SQL = (
    "jsonb_array_length(jsonb_path_query_array(refunds, '$[*] ? (@.method == \"ticket\")'))"
    " + jsonb_path_exists(refunds, '$[*] ? (@.method == \"cash\" && @.amount_cents > 0)')::int"
    " + jsonb_path_exists(refunds, "
    "'$[*] ? (@.method == \"tournament_money\" && @.amount_cents > 0)')::int"
)
# (JSON path functions, not a subquery over jsonb_array_elements: a subquery per line cost
# 0.4 s per 30k lines, docs/performance.md.)


def _summary_sql(digest):
    return f"""
SELECT {digest},
       count(*),
       coalesce(sum(CASE WHEN refunds IS NULL
                         THEN {" + ".join(f"({f} > 0)::int" for f in _AMOUNT_FIELDS)}
                         ELSE ({_REFUND_CREDITS_SQL}) END), 0),
       coalesce(sum({" + ".join(_AMOUNT_FIELDS)}), 0)
FROM {_LINES_TABLE} WHERE proposal_id = %(proposal)s
"""


# One statement per canonical form (proposals/fingerprint.py).
_SUMMARY_SQL = {
    fingerprint.LEGACY_DIGEST_SQL: _summary_sql(fingerprint.LEGACY_DIGEST_SQL),
    fingerprint.POLICY_DIGEST_SQL: _summary_sql(fingerprint.POLICY_DIGEST_SQL),
}


def lines_summary(proposal):
    """(fingerprint, lines, credits, cents) of a proposal's stored lines; zero components are no
    credit. The fingerprint is computed in the database on PostgreSQL (no line leaves it)."""
    if _postgres():
        # The legacy or the policy form of the fingerprint, as the proposal has it.
        digest, header = fingerprint.digest_sql(proposal)
        with sort_memory(), connection.cursor() as cursor:
            cursor.execute(_SUMMARY_SQL[digest], {"header": header, "proposal": proposal.pk})
            digest, lines, credits, cents = cursor.fetchone()
        return digest, lines, int(credits), int(cents)
    return lines_summary_in_python(proposal)


def lines_summary_in_python(proposal):
    rows = list(PayoutLine.objects.filter(proposal_id=proposal.pk).values_list(*_LINE_FIELDS[1:]))
    credits = [c for row in rows for c in line_credits(proposal.pk, *row)]
    return (
        fingerprint.python_fingerprint(proposal),
        len(rows),
        len(credits),
        sum(c["amount"] for c in credits),
    )


_NON_CASH_SQL = f"""
SELECT p->>'method', count(*), coalesce(sum((p->>'amount_cents')::bigint), 0)
FROM {_LINES_TABLE}, jsonb_array_elements(refunds) p
WHERE proposal_id = %(proposal)s AND refunds IS NOT NULL AND p->>'method' <> 'cash'
  AND ((p->>'amount_cents')::bigint > 0 OR p->>'method' = 'ticket')
GROUP BY 1
"""


def approved_non_cash(proposal) -> dict[str, tuple[int, int]]:
    """{method: (parts, cents)} of the approved lines' refunds that are not cash (tickets,
    tournament money): what posting must have booked in those forms, no more, no less -- the
    rest of the approved total is cash."""
    if _postgres():
        with connection.cursor() as cursor:
            cursor.execute(_NON_CASH_SQL, {"proposal": proposal.pk})
            return {method: (int(n), int(cents)) for method, n, cents in cursor.fetchall()}
    out: dict[str, tuple[int, int]] = {}
    for refunds in PayoutLine.objects.filter(
        proposal_id=proposal.pk, refunds__isnull=False
    ).values_list("refunds", flat=True):
        for part in refunds or ():
            if part["method"] != "cash" and _is_credit(part):
                n, cents = out.get(part["method"], (0, 0))
                out[part["method"]] = (n + 1, cents + part["amount_cents"])
    return out


def _is_credit(part) -> bool:
    """Whether a part of a line's `refunds` is booked as a credit: any amount above zero, and a
    ticket whatever its value. A ticket is the thing itself, given back to the player (a seat
    in a freeroll is worth 0.00 and is still theirs again); no money is a credit of nothing."""
    return part["amount_cents"] > 0 or part["method"] == Method.TICKET


def line_credits(proposal_id, entry_id, player_id, *amounts_and_refunds):
    """The credits of one line, as the chunk writer books them: [{key, component, method,
    ticket_id, amount}]. `amounts_and_refunds`: the line's amounts in COMPONENT_FIELDS order,
    then its `refunds` (None, or [{"method", "amount_cents", "ticket_id"?}]).

    A line without refunds: one cash credit per non-zero component. A line with refunds (rule 1
    returned in the form paid): they replace its components, one credit per method -- the cash
    items summed under cash_refund, the tournament money under tournament_money -- and one per
    ticket under its own key (ticket_key), amount the ticket's value (0 included: _is_credit).
    """
    *amounts, refunds = amounts_and_refunds
    if refunds is None:
        return [
            {
                "key": credit_key(proposal_id, entry_id, component),
                "component": str(component),
                "method": Method.CASH.value,
                "ticket_id": "",
                "amount": amount,
            }
            for (component, _), amount in zip(COMPONENT_FIELDS, amounts, strict=True)
            if amount > 0
        ]
    out: list[dict] = []
    summed: dict[str, int] = {}
    for part in refunds:
        method, cents = part["method"], part["amount_cents"]
        if not _is_credit(part):
            continue
        if method == Method.TICKET:
            out.append(
                {
                    "key": ticket_key(proposal_id, entry_id, part["ticket_id"]),
                    "component": Component.TICKET.value,
                    "method": Method.TICKET.value,
                    "ticket_id": part["ticket_id"],
                    "amount": cents,
                }
            )
        elif method in REFUND_COMPONENTS:
            summed[method] = summed.get(method, 0) + cents
        else:  # the snapshot refuses other methods: never guess one
            raise ValueError(f"entry {entry_id}: refund in an unknown method {method!r}")
    for method, cents in summed.items():
        component = REFUND_COMPONENTS[Method(method)]
        out.append(
            {
                "key": credit_key(proposal_id, entry_id, component),
                "component": component.value,
                "method": method,
                "ticket_id": "",
                "amount": cents,
            }
        )
    return out


# ---------------------------------------------------------------------------------------------
# Booking one chunk
# ---------------------------------------------------------------------------------------------

# The entry's part of the key is computed once per line, not once per credit (key_part_sql:
# the common case inline, refunds_admin/db/keys.py, where its Python twin credit_key lives).
_VALUES = ", ".join(f"('{component}', c.{field})" for component, field in COMPONENT_FIELDS)
# A line with `refunds` (rule 1 in the form paid) is booked from them instead (line_credits):
# the component of each method; an unknown method gets none, and the NOT NULL column refuses it.
_REFUND_COMPONENT_CASES = " ".join(
    f"WHEN '{method}' THEN '{component}'" for method, component in REFUND_COMPONENTS.items()
)


def _chunk_sql(*, skip_booked: bool) -> str:
    """The one statement that books a chunk: its lines, their credits, inserted.

    With `skip_booked` False it is a plain INSERT, for a chunk none of whose credits is booked
    yet -- the normal case: a chunk's credits commit together with the job's progress past it,
    so a run continues after them. ON CONFLICT DO NOTHING costs a speculative insertion per
    credit (docs/performance.md, "Posting"); a key already booked (a redelivered chunk) makes the
    plain INSERT fail as a whole, and the chunk is booked again with `skip_booked`. The primary
    key is what makes a credit posted exactly once, in both statements.
    """
    on_conflict = "ON CONFLICT (key) DO NOTHING" if skip_booked else ""
    key = credit_key_sql("%(proposal)s::text", "c.key_part", "v.component")
    ticket = ticket_key_sql("%(proposal)s::text", "r.key_part", key_part_sql("r.ticket_id"))
    refund = credit_key_sql(
        "%(proposal)s::text", "r.key_part", f"CASE r.method {_REFUND_COMPONENT_CASES} END"
    )
    return f"""
WITH chunk AS (
    SELECT {", ".join(_LINE_FIELDS)}, {key_part_sql("entry_id")} AS key_part
    FROM {_LINES_TABLE}
    WHERE proposal_id = %(proposal)s AND position > %(after)s
    ORDER BY position LIMIT %(size)s
), parts AS (
    -- The refunds of the chunk's lines returned in the form paid, one row per part.
    SELECT c.entry_id, c.player_id, c.key_part, p->>'method' AS method,
           coalesce(p->>'ticket_id', '') AS ticket_id, (p->>'amount_cents')::bigint AS amount
    FROM chunk c CROSS JOIN LATERAL jsonb_array_elements(c.refunds) AS p
    WHERE c.refunds IS NOT NULL
        AND ((p->>'amount_cents')::bigint > 0 OR p->>'method' = 'ticket')
), credits AS (
    SELECT {key} AS key, c.entry_id, c.player_id, v.component, v.amount, 'cash' AS method,
           '' AS ticket_id
    FROM chunk c CROSS JOIN LATERAL (VALUES {_VALUES}) AS v(component, amount)
    WHERE v.amount > 0 AND c.refunds IS NULL
    UNION ALL
    SELECT {ticket}, r.entry_id, r.player_id, 'ticket', r.amount, 'ticket', r.ticket_id
    FROM parts r WHERE r.method = 'ticket'
    UNION ALL
    SELECT {refund}, r.entry_id, r.player_id, CASE r.method {_REFUND_COMPONENT_CASES} END, sum(r.amount),
           r.method, ''
    FROM parts r WHERE r.method <> 'ticket'
    GROUP BY r.entry_id, r.player_id, r.key_part, r.method
), booked AS (
    INSERT INTO {_CREDITS_TABLE} (key, proposal_id, entry_id, component, player_id, currency,
                               amount_cents, method, ticket_id, created_at)
    SELECT key, %(proposal)s, entry_id, component, player_id, %(currency)s, amount, method,
           ticket_id, %(now)s
    FROM credits
    {on_conflict}
    RETURNING 1
)
SELECT (SELECT max(position) FROM chunk),
       (SELECT count(*) FROM credits),
       (SELECT coalesce(sum(amount), 0) FROM credits),
       (SELECT count(*) FROM booked)
"""


_CHUNK_SQL = _chunk_sql(skip_booked=True)
_FRESH_CHUNK_SQL = _chunk_sql(skip_booked=False)
_UNIQUE_VIOLATION = "23505"


def book_chunk(proposal, after_position, size):
    """Book the credits of the next `size` lines after `after_position`; already booked keys are
    skipped. Must run inside the chunk's transaction.

    Returns (last position, credits in the chunk, cents in the chunk, newly booked), or None
    when no line is left.
    """
    if _postgres():
        params = {
            "proposal": proposal.pk,
            "after": after_position,
            "size": size,
            "currency": proposal.currency,
            # The app's clock, as on SQLite, not the database server's now(): one source of
            # time for every record (and a frozen clock in tests holds).
            "now": timezone.now(),
        }
        with connection.cursor() as cursor:
            try:
                with transaction.atomic():  # a savepoint: a failed try undoes only itself
                    cursor.execute(_FRESH_CHUNK_SQL, params)
            except IntegrityError as exc:
                if getattr(exc.__cause__, "sqlstate", None) != _UNIQUE_VIOLATION:
                    raise
                cursor.execute(_CHUNK_SQL, params)  # some were booked: skip those
            through, credits, cents, booked = cursor.fetchone()
        return None if through is None else (through, credits, int(cents), booked)

    lines = list(
        PayoutLine.objects.filter(proposal_id=proposal.pk, position__gt=after_position)
        .order_by("position")
        .values_list(*_LINE_FIELDS)[:size]
    )
    if not lines:
        return None
    now = timezone.now()
    credits = [
        Credit(
            key=c["key"],
            proposal_id=proposal.pk,
            entry_id=entry_id,
            component=c["component"],
            method=c["method"],
            ticket_id=c["ticket_id"],
            player_id=player_id,
            currency=proposal.currency,
            amount_cents=c["amount"],
            created_at=now,
        )
        for _, entry_id, player_id, *rest in lines
        for c in line_credits(proposal.pk, entry_id, player_id, *rest)
    ]
    keys = [credit.key for credit in credits]
    already = Credit.objects.filter(key__in=keys).count() if keys else 0
    Credit.objects.bulk_create(credits, ignore_conflicts=True, batch_size=500)
    return lines[-1][0], len(credits), sum(c.amount_cents for c in credits), len(credits) - already
