"""The API's contract as pydantic models: what docs/openapi.json says each body and answer holds.

The request bodies are *described* here, never parsed here: POST /api/snapshots stores its body
byte for byte and the engine's validator (payouts/snapshot.py) is the one judge of a snapshot,
with its own per-field messages; POST /api/outages keeps its own parser for the same reason.
These models only tell a client generator and an API fuzzer what to send and what comes back.
The bounds are the engine's (docs/snapshot-limits.md), taken from its constants.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from refunds_admin.incidents.models import Incident
from refunds_admin.payouts.money import CURRENCIES_WITH_CENTS
from refunds_admin.payouts.snapshot import (
    FORMAT,
    MAX_BIGINT,
    MAX_ID_LENGTH,
    MAX_INT,
    MAX_NAME_LENGTH,
    MAX_PAYMENTS,
    MAX_PLACE,
    MAX_SCREEN_NAME_LENGTH,
)
from refunds_admin.proposals.models import PayoutProposal

MAX_TOURNAMENTS = 5000  # tournaments of one outage (POST /api/outages)

# An amount is a string of digits with at most two decimals (never a JSON number: floats lose
# cents), at most 10,000,000,000,000.00 (payouts.money.MAX_CENTS): at most 14 digits before
# the point, the pattern's part of that bound.
AMOUNT = r"^[0-9]{1,14}(\.[0-9]{1,2})?$"
Amount = Field(pattern=AMOUNT, examples=["30.00"])
# An id the platform gives: 1 to 128 characters, no control characters (they travel in headers).
ID_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"


# Free text the engine accepts: no control characters (docs/snapshot-limits.md).
TEXT_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"


def _id(**extra):
    return Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=ID_PATTERN, **extra)


class Prize(BaseModel):
    """One row of the payout table: `place` or an inclusive `places: [from, to]`."""

    model_config = ConfigDict(extra="forbid")
    place: int | None = Field(None, ge=1, le=MAX_PLACE)
    places: list[Annotated[int, Field(ge=1, le=MAX_PLACE)]] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="[from, to], inclusive. The whole table may list at most the snapshot's "
        "entries plus 1,000 places.",
    )
    amount: str = Amount
    non_cash: bool = False
    description: str | None = Field(None, max_length=MAX_NAME_LENGTH)


class Tournament(BaseModel):
    external_id: str = _id(description="The platform's id; unique per tournament.")
    name: str | None = Field(None, max_length=MAX_NAME_LENGTH)
    currency: Literal[tuple(sorted(CURRENCIES_WITH_CENTS))] = Field(  # type: ignore[valid-type]
        description="ISO 4217 code of a currency with cents"
    )
    buy_in: str = Amount
    fee: str = Amount
    starts_at: datetime = Field(
        description="Actual start, ISO 8601 with an offset from -12:00 to +14:00, in "
        "[2000-01-01, 2100-01-01) UTC."
    )
    chips_in_play: int | None = Field(
        None, ge=0, le=MAX_BIGINT, description="Cross-check: the sum of the active chips."
    )
    prizes: list[Prize]
    # policies.md: tournament formats and the policy
    policy: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9-]{0,62}$",
        description="A cancellation policy id the app knows; else the app's default policy.",
    )
    bounty: str | None = Field(
        None, pattern=AMOUNT, description="The knockout part of one entry's price."
    )
    guarantee: str | None = Field(
        None, pattern=AMOUNT, description="The advertised guaranteed prize pool."
    )


class Payment(BaseModel):
    """One part of what an entry paid with; a ticket names its `ticket_id`."""

    model_config = ConfigDict(extra="forbid")
    method: Literal["cash", "tournament_money", "ticket"]
    amount: str = Amount
    ticket_id: str | None = _id(default=None)


class Entry(BaseModel):
    entry_id: str = _id(description="Unique within the snapshot.")
    player_id: str = _id(description="The account to credit; re-entries share it.")
    screen_name: str | None = Field(None, max_length=MAX_SCREEN_NAME_LENGTH, pattern=TEXT_PATTERN)
    email: str | None = Field(
        None,
        max_length=254,
        pattern=r"^$|^[^@\s]+@[^@\s]+\.[^@\s]+$",
        description='An address (name@domain.tld), or "" for none.',
    )
    status: Literal["active", "eliminated"]
    chips: int | None = Field(None, ge=1, le=MAX_BIGINT, description="Active entries only.")
    finish_place: int | None = Field(None, ge=1, le=MAX_INT)
    prize_awarded: str | None = Field(None, pattern=AMOUNT)
    buy_in_paid: str | None = Field(None, pattern=AMOUNT, description="Default: the buy-in.")
    fee_paid: str | None = Field(None, pattern=AMOUNT, description="Default: the fee.")
    bounty_paid: str | None = Field(None, pattern=AMOUNT)
    bounty: str | None = Field(None, pattern=AMOUNT, description="On an active entry's head.")
    bounties_won: str | None = Field(None, pattern=AMOUNT)
    rebuys_paid: str | None = Field(None, pattern=AMOUNT)
    rebuy_fees_paid: str | None = Field(None, pattern=AMOUNT)
    paid_with: list[Payment] | None = Field(
        None,
        min_length=1,
        max_length=MAX_PAYMENTS,
        description="Adds up exactly to buy_in_paid + rebuys_paid + fee_paid + "
        "rebuy_fees_paid + bounty_paid.",
    )


class SnapshotIncident(BaseModel):
    failed_at: datetime | None = None
    site_wide_issue: bool = False


# A snapshot the engine accepts (docs/formats.md): what a generated client or a fuzzer sends
# first. Four entries, one eliminated, one paid with a ticket.
SNAPSHOT_EXAMPLE: dict[str, Any] = {
    "format": FORMAT,
    "tournament": {
        "external_id": "UP-2026-11-29-001",
        "name": "$30 + $3 Sunday Special",
        "currency": "USD",
        "buy_in": "30.00",
        "fee": "3.00",
        "starts_at": "2026-11-29T18:00:00Z",
        "chips_in_play": 30000,
        "prizes": [{"place": 1, "amount": "80.00"}, {"place": 2, "amount": "40.00"}],
    },
    "entries": [
        {"entry_id": "e1", "player_id": "p1", "screen_name": "ace", "status": "active",
         "chips": 18000, "paid_with": [{"method": "ticket", "amount": "33.00",
                                         "ticket_id": "T-991"}]},
        {"entry_id": "e2", "player_id": "p2", "status": "active", "chips": 8000},
        {"entry_id": "e3", "player_id": "p3", "status": "active", "chips": 4000},
        {"entry_id": "e4", "player_id": "p4", "status": "eliminated", "finish_place": 4},
    ],
}  # fmt: skip


class TournamentSnapshot(BaseModel):
    """A `tournament-snapshot/1` document (docs/formats.md, docs/snapshot-limits.md). The schema
    gives the shape; the engine also checks what a schema cannot say (sums, unique ids, the
    policy id, the prize table against the entries, a key that looks like a misspelt field:
    `buyin_paid` for `buy_in_paid`) and names the field of each problem."""

    model_config = ConfigDict(json_schema_extra={"examples": [SNAPSHOT_EXAMPLE]})
    format: Literal[FORMAT]  # type: ignore[valid-type]
    tournament: Tournament
    entries: list[Entry] = Field(min_length=1)
    incident: SnapshotIncident | None = None


class OutageReport(BaseModel):
    """One failure across many tournaments. All or nothing."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "failed_at": "2026-11-29T21:14:00Z",
                    "cause": "server_crash",
                    "description": "Data centre A lost power",
                    "external_ids": ["UP-2026-11-29-001"],
                }
            ]
        },
    )
    failed_at: datetime = Field(
        description="ISO 8601 with an offset from -12:00 to +14:00, from 2000-01-01, not in the future."
    )
    cause: Literal[tuple(Incident.Cause.values)]  # type: ignore[valid-type]
    description: str = Field(
        "",
        description="What happened, free text. The same failed_at, cause and external_ids again "
        "is a retry of the outage recorded: with another description it is a 409 naming "
        "`description`, and nothing is changed.",
    )
    external_ids: list[Annotated[str, _id()]] = Field(
        min_length=1,
        max_length=MAX_TOURNAMENTS,
        json_schema_extra={"uniqueItems": True},
        description="The tournaments' external ids, each listed once; each must have a snapshot.",
    )


# ---------------------------------------------------------------------------------------------
# Answers
# ---------------------------------------------------------------------------------------------


class Problem(BaseModel):
    field: str = Field(
        description="Where: a field path such as `tournament.fee` or `entries[0] (e1).chips`, "
        "`document` or `body` for the whole body, a tournament's external id for an outage."
    )
    message: str


class ApiError(BaseModel):
    """Every refusal (4xx, 5xx) has this shape."""

    error: str
    problems: list[Problem] = Field(description="At most the first 50.")
    problems_total: int | None = Field(None, description="Present when there were more than 50.")


class TournamentRef(BaseModel):
    id: int
    external_id: str


class SnapshotStored(BaseModel):
    version: int
    sha256: str = Field(description="SHA-256 of the body as stored, byte for byte.")
    entries: int
    active: int


class SnapshotImported(BaseModel):
    tournament: TournamentRef
    snapshot: SnapshotStored


class OutageIncident(BaseModel):
    id: int
    external_id: str
    rule: str


class OutageRecorded(BaseModel):
    id: int
    failed_at: datetime
    cause: Literal[tuple(Incident.Cause.values)]  # type: ignore[valid-type]
    deadline: datetime
    incidents: list[OutageIncident]


class ProposalRef(BaseModel):
    id: int
    version: int
    status: Literal[tuple(PayoutProposal.Status.values)]  # type: ignore[valid-type]


class IncidentOut(BaseModel):
    id: int
    status: Literal[tuple(Incident.Status.values)]  # type: ignore[valid-type]
    cause: str
    failed_at: datetime
    deadline: datetime
    rule: str = Field(description="The payout rule the timing selects; empty until known.")
    site_wide_issue: bool
    resumed_at: datetime | None
    cancelled_at: datetime | None
    proposals: list[ProposalRef]


class TournamentIncidents(BaseModel):
    tournament: TournamentRef
    incidents: list[IncidentOut]


class PolicyRef(BaseModel):
    id: str
    version: int
    sha256: str


class ProposalOut(BaseModel):
    id: int
    version: int
    status: Literal[tuple(PayoutProposal.Status.values)]  # type: ignore[valid-type]
    status_label: str
    tournament: TournamentRef
    incident: int
    rule: str
    currency: str
    policy: PolicyRef
    fingerprint: str
    lines: int
    total_cents: int = Field(description="The sum of every line, in cents.")
    components_cents: dict[str, int] = Field(
        description="Totals by component (buy_in_refund, next_prize, equal_share, chip_equity, "
        "fee_refund, bounty_refund), in cents."
    )
    refunds_by_method: dict[str, int] = Field(
        description="What goes back in which form: cents under cash, tournament_money and "
        "ticket; `tickets` counts the tickets returned."
    )
    summary: dict[str, Any] = Field(
        description="The engine's payout-proposal/1 summary, amounts as strings."
    )
    warnings: list[str]


class MethodProgress(BaseModel):
    method: str
    credits: int
    amount_cents: int


class PostingProgress(BaseModel):
    proposal: int
    state: Literal["queued", "running", "posted", "failed"] | None = Field(
        description="null before approval (no posting job yet)."
    )
    status: str | None = Field(
        description="queued, running, stalled, waiting, failed or done; null before approval."
    )
    status_label: str | None = Field(description="The same in words, as the page says it.")
    done: bool
    posted: int = Field(description="Credits posted so far (one per non-zero component).")
    total: int = Field(description="Credits to post; 0 until the job has started.")
    posted_cents: int
    total_cents: int
    percent: int = Field(ge=0, le=100)
    error: str
    attempts: int | None = None
    heartbeat_at: datetime | None = None
    wallet: str


class StatementCredit(BaseModel):
    key: str
    component: str
    method: str
    ticket_id: str
    currency: str
    amount_cents: int
    cashier_reference: str


class StatementOut(BaseModel):
    proposal: int
    entry_id: str
    player_id: str
    screen_name: str
    currency: str
    total_cents: int
    amounts_cents: dict[str, int] = Field(description="The line's amounts by component.")
    text: str = Field(description="The statement as the player reads it (the engine's explain).")
    credits: list[StatementCredit] = Field(description="Posted credits; empty before posting.")
