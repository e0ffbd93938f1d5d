"""Credit keys: the Python form and its SQL twin, built from the same constants.

A credit's key is `proposal-<id>/<entry id, percent-encoded>/<component>` (docs/posting.md,
"Credit keys"): the ledger's primary key and the Idempotency-Key at the cashier. Python builds it
on SQLite and for the cashier; on PostgreSQL the chunk writer builds it in SQL, from the
proposal's lines, without a line leaving the database. Both must give the very same text for
every id, so both are written here, side by side, from KEY_PREFIX, SEPARATOR and UNRESERVED.
"""

from urllib.parse import quote, unquote

KEY_PREFIX = "proposal-"
SEPARATOR = "/"
# RFC 3986 unreserved characters, as a regular-expression class: an id keeps them as they are,
# every other character is percent-encoded (UTF-8, upper-case hex). urllib's quote(safe="")
# leaves exactly these (tests/services/test_db_face.py checks every ASCII character).
UNRESERVED = "A-Za-z0-9._~-"


def key_part(text: str) -> str:
    """An id as it appears in a credit key: percent-encoded UTF-8 (RFC 3986), unreserved
    characters left as they are. Lossless (`unquote` gives the id back), printable ASCII (fit for
    an HTTP header), and the same for the same id on every retry. SQL twin: ledger_key_part()."""
    return quote(text, safe="")


def credit_key(proposal_id: int, entry_id: str, component: str) -> str:
    """The credit's identity, also its Idempotency-Key at the cashier.

    One key per entry *and component* (not per entry with components summed): each credit then
    matches one line of the player's statement, and the key never depends on how the other
    components of the entry were computed, so it is the same on every retry. SQL twin:
    credit_key_sql().
    """
    return f"{KEY_PREFIX}{proposal_id}{SEPARATOR}{key_part(entry_id)}{SEPARATOR}{component}"


# The component of a ticket given back (ledger.models.Component.TICKET): its key names the
# ticket too.
TICKET = "ticket"


def ticket_key(proposal_id: int, entry_id: str, ticket_id: str) -> str:
    """The key of a ticket given back: `proposal-<id>/<entry id>/ticket/<ticket id>`, both ids
    percent-encoded. One credit per ticket, named by the ticket itself, so the key never depends
    on the order of the entry's `paid_with` nor on its other refunds: the same on every retry,
    and the cashier re-issues the ticket once. SQL twin: ticket_key_sql()."""
    return f"{credit_key(proposal_id, entry_id, TICKET)}{SEPARATOR}{key_part(ticket_id)}"


def parse_credit_key(key: str) -> tuple[int, str, str]:
    """(proposal id, entry id, component) back from a key: the round trip of credit_key (and of
    ticket_key, whose ticket id is parse_ticket_id's)."""
    head, encoded, component, *_ = key.split(SEPARATOR)
    return int(head.removeprefix(KEY_PREFIX)), unquote(encoded, errors="strict"), component


def parse_ticket_id(key: str) -> str | None:
    """The ticket id of a ticket_key, None for any other key."""
    parts = key.split(SEPARATOR)
    if len(parts) == 4 and parts[2] == TICKET:
        return unquote(parts[3], errors="strict")
    return None


# The SQL twins. ledger_key_part() is created by migration ledger/0005 from this text.
KEY_PART_FUNCTION = rf"""
CREATE FUNCTION ledger_key_part(t text) RETURNS text AS $$
    SELECT CASE WHEN t ~ '^[{UNRESERVED}]*$' THEN t ELSE (
        SELECT string_agg(
            CASE WHEN ch ~ '^[{UNRESERVED}]$' THEN ch
                 ELSE upper(regexp_replace(encode(convert_to(ch, 'UTF8'), 'hex'),
                                           '(..)', '%\1', 'g'))
            END, '' ORDER BY n)
        FROM regexp_split_to_table(t, '') WITH ORDINALITY AS s(ch, n))
    END
$$ LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE;
"""


def key_part_sql(column: str) -> str:
    """SQL for key_part(`column`). The common case, an id that needs no percent-encoding, is
    tested inline: PostgreSQL cannot inline ledger_key_part() (its body has a subquery), and
    calling it once per credit was a large share of a posting (docs/performance.md, "Posting").
    The function returns such an id unchanged, so the keys are the same either way."""
    return (
        f"CASE WHEN {column} ~ '^[{UNRESERVED}]*$' THEN {column} ELSE ledger_key_part({column}) END"
    )


def credit_key_sql(proposal: str, part: str, component: str) -> str:
    """SQL for credit_key() from three SQL expressions (the proposal id as text, the entry's key
    part, the component)."""
    return (
        f"'{KEY_PREFIX}' || {proposal} || '{SEPARATOR}' || {part} || '{SEPARATOR}' || {component}"
    )


def ticket_key_sql(proposal: str, part: str, ticket_part: str) -> str:
    """SQL for ticket_key() from three SQL expressions (the proposal id as text, the entry's key
    part, the ticket id's key part)."""
    return f"{credit_key_sql(proposal, part, repr(TICKET))} || '{SEPARATOR}' || {ticket_part}"
