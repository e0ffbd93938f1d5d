"""The app's own ledger: one immutable Credit per (proposal, entry, component), plus the
bookkeeping of the posting job and of deliveries to the operator's cashier.

Credits are append-only (a PostgreSQL trigger refuses UPDATE and DELETE, migration 0002), so
anything that changes over time -- the job's progress, a credit's delivery to the cashier --
lives in its own table.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

# The credit key's Python form lives beside its SQL form (refunds_admin/db/keys.py).
from refunds_admin.db.keys import (  # noqa: F401
    credit_key,
    key_part,
    parse_credit_key,
    parse_ticket_id,
    ticket_key,
)
from refunds_admin.jobs.kinds import JobKind, register


class Component(models.TextChoices):
    """The parts of an entry's refund, as the player's statement lists them."""

    BUY_IN_REFUND = "buy_in_refund", "Buy-in refund"
    NEXT_PRIZE = "next_prize", "Next prize"
    CHIP_EQUITY = "chip_equity", "Chip equity"
    FEE_REFUND = "fee_refund", "Fee refund"
    # A policy's components (policies.md), paid in cash like the four above.
    EQUAL_SHARE = "equal_share", "Equal share"
    BOUNTY_REFUND = "bounty_refund", "Bounty"
    # A rule-1 refund given back in the form it was paid (policies.md, `refund_form: as_paid`):
    # the line's `refunds` replace its buy-in, fee and bounty refunds as credits, one credit per
    # method and one per ticket (REFUND_COMPONENTS).
    CASH_REFUND = "cash_refund", "Refund in cash"
    TOURNAMENT_MONEY = "tournament_money", "Refund in tournament money"
    TICKET = "ticket", "Ticket returned"


class Method(models.TextChoices):
    """The form a credit takes at the wallet (cashier-api.md `method`): cash is withdrawable,
    tournament money only buys into tournaments, a ticket is one tournament seat given back."""

    CASH = "cash", "Cash"
    TOURNAMENT_MONEY = "tournament_money", "Tournament money"
    TICKET = "ticket", "Ticket"


# The component under which each method of a line's `refunds` is credited.
REFUND_COMPONENTS = {
    Method.CASH: Component.CASH_REFUND,
    Method.TOURNAMENT_MONEY: Component.TOURNAMENT_MONEY,
    Method.TICKET: Component.TICKET,
}


def method_of(component: str) -> str:
    """A credit's method follows from its component: every component is cash but the refunds
    given back as tournament money or as a ticket."""
    if component == Component.TOURNAMENT_MONEY:
        return Method.TOURNAMENT_MONEY
    if component == Component.TICKET:
        return Method.TICKET
    return Method.CASH


# PayoutLine field holding each component's amount, in statement order (the policy's two
# components last, so that the first four keep the order they always had).
COMPONENT_FIELDS = [
    (Component.BUY_IN_REFUND, "buy_in_refund_cents"),
    (Component.NEXT_PRIZE, "next_prize_cents"),
    (Component.CHIP_EQUITY, "chip_equity_cents"),
    (Component.FEE_REFUND, "fee_refund_cents"),
    (Component.EQUAL_SHARE, "equal_share_cents"),
    (Component.BOUNTY_REFUND, "bounty_refund_cents"),
]


class Credit(models.Model):
    """Money booked to a player: one component of one entry's refund. Never changed or deleted.

    A player's balance in a currency is the sum of their credits in that currency.
    """

    key = models.CharField(
        max_length=300,
        primary_key=True,
        help_text="proposal-<id>/<entry id>/<component>, and /<ticket id> for a ticket",
    )
    # No database foreign key: checking it per credit is a large share of a posting
    # (docs/performance.md, "Foreign keys"). Integrity holds anyway: credits are inserted only
    # from the proposal's own lines (so the proposal exists), and on PostgreSQL a trigger refuses
    # to delete a proposal that has credits (migration 0002); PROTECT does the same in the ORM.
    proposal = models.ForeignKey(
        "proposals.PayoutProposal",
        on_delete=models.PROTECT,
        related_name="credits",
        db_constraint=False,
    )
    entry_id = models.CharField(max_length=128)
    component = models.CharField(max_length=20, choices=Component.choices)
    player_id = models.CharField(max_length=128)
    currency = models.CharField(max_length=3)
    amount_cents = models.BigIntegerField()
    # The form the money takes (db_default: the one-statement chunk writer books cash lines
    # without naming it); a ticket names the ticket given back, its amount the ticket's value.
    method = models.CharField(
        max_length=20, choices=Method.choices, default=Method.CASH, db_default=Method.CASH
    )
    ticket_id = models.CharField(max_length=128, blank=True, default="", db_default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["proposal", "key"]
        # A plain index (no LIKE index): player lookup is by exact player id.
        indexes = [models.Index(fields=["player_id", "currency"], name="credit_player_idx")]
        constraints = [
            # A zero component is not a credit: nothing is booked for it. A ticket is, whatever
            # its value: the ticket itself goes back (a freeroll's seat, worth 0.00).
            models.CheckConstraint(
                condition=Q(amount_cents__gt=0) | Q(method=Method.TICKET, amount_cents=0),
                name="credit_amount_positive",
            ),
            # A ticket credit names its ticket; no other credit does.
            models.CheckConstraint(
                condition=(Q(method=Method.TICKET) & ~Q(ticket_id=""))
                | (~Q(method=Method.TICKET) & Q(ticket_id="")),
                name="credit_ticket_named",
            ),
            # The method follows from the component (method_of): never cash for a ticket.
            models.CheckConstraint(
                condition=Q(component=Component.TICKET, method=Method.TICKET)
                | Q(component=Component.TOURNAMENT_MONEY, method=Method.TOURNAMENT_MONEY)
                | (
                    ~Q(component__in=[Component.TICKET, Component.TOURNAMENT_MONEY])
                    & Q(method=Method.CASH)
                ),
                name="credit_method_of_component",
            ),
            # A proposal gives each ticket back once (the snapshot names a ticket once).
            models.UniqueConstraint(
                fields=["proposal", "ticket_id"],
                condition=Q(method=Method.TICKET),
                name="credit_ticket_once",
            ),
        ]

    def __str__(self):
        return f"{self.key} {self.amount_cents} {self.currency}"


class PostingJob(models.Model):
    """The outbox row of an approved proposal: written in the approval's own transaction, so a
    broker that is down at that moment cannot lose the job; the sweeper re-queues it.

    Progress (`posted` of `total` credits, `posted_cents` of `total_cents`) is what the progress
    bar shows. `posted_through` is the position of the last line whose credits are all posted:
    a restarted job continues after it.
    """

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        POSTED = "posted", "Posted"
        FAILED = "failed", "Failed"

    proposal = models.OneToOneField(
        "proposals.PayoutProposal", on_delete=models.PROTECT, related_name="posting_job"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    wallet = models.CharField(
        max_length=10, help_text="'ledger' or 'cashier': copied from the approval's posting order."
    )
    wallet_identity = models.CharField(
        max_length=500, blank=True, help_text="The cashier's base URL at approval ('' = ledger)."
    )
    total = models.PositiveIntegerField(help_text="Credits to post (non-zero components).")
    total_cents = models.BigIntegerField()
    lines_digest = models.CharField(
        max_length=64, help_text="SHA-256 of the lines as approved; posting refuses other lines."
    )
    posted = models.PositiveIntegerField(default=0)
    posted_cents = models.BigIntegerField(default=0)
    posted_through = models.IntegerField(
        default=-1, help_text="Position of the last line whose credits are all posted."
    )
    attempts = models.PositiveIntegerField(
        default=0,
        help_text="Runs that ended in a real error (not a crash, nor the wallet unavailable).",
    )
    last_error = models.TextField(blank=True)
    # The wallet unavailable (cashier down or throttling, database or broker unreachable, a
    # worker killed): the job waits and retries without using up attempts, until the budget
    # (POSTING_UNAVAILABLE_BUDGET) is spent.
    wallet_unavailable_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Since when the wallet is unavailable; None when it answers.",
    )
    wallet_unavailable_retries = models.PositiveIntegerField(
        default=0,
        help_text="Consecutive runs stopped by the wallet being unavailable (sets the backoff).",
    )
    retry_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Not before then: the backoff while the wallet is unavailable.",
    )
    # What a queued job waits for, as its page says: the cashier (a worker killed counts the
    # same), or the database (its connection failed or it shut down: SQLSTATE 08xxx, 57P0x).
    waiting_for = models.CharField(
        max_length=10,
        blank=True,
        choices=[("wallet", "the wallet"), ("database", "the database")],
        help_text="While the job waits with backoff: the wallet or the database; '' otherwise.",
    )
    created_at = models.DateTimeField(default=timezone.now)
    queued_at = models.DateTimeField(default=timezone.now, help_text="Last time it was queued.")
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(posted__lte=models.F("total"))
                & Q(posted_cents__lte=models.F("total_cents")),
                name="posting_never_exceeds_approved",
            ),
            models.CheckConstraint(
                condition=Q(wallet="ledger", wallet_identity="")
                | (Q(wallet="cashier") & ~Q(wallet_identity="")),
                name="posting_job_names_its_wallet",
            ),
            # A failed job always says why.
            models.CheckConstraint(
                condition=~Q(state="failed") | ~Q(last_error=""), name="failed_job_says_why"
            ),
        ]

    def __str__(self):
        return f"Posting of proposal {self.proposal_id}: {self.posted}/{self.total} ({self.state})"


class CashierDelivery(models.Model):
    """Where one credit stands at the operator's cashier (jobs whose wallet is the cashier).

    A credit counts as posted only once the cashier confirmed it (state `applied`). Deliveries
    only move forward: a refused one may later be applied (after a manager's resume), an applied
    one never changes, and none is ever deleted (PostgreSQL triggers, migration 0005).
    """

    class State(models.TextChoices):
        APPLIED = "applied", "Applied at the cashier"
        FAILED = "failed", "Refused by the cashier: needs a human"

    credit = models.OneToOneField(Credit, on_delete=models.PROTECT, related_name="delivery")
    state = models.CharField(max_length=10, choices=State.choices)
    cashier_credit_id = models.CharField(max_length=128, blank=True)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["credit"]
        verbose_name_plural = "cashier deliveries"

    def __str__(self):
        return f"{self.credit_id} {self.state}"


class PostedTotal(models.Model):
    """What one posted proposal paid, written in the very transaction that marks it posted (so
    it can never disagree with the ledger): the finance report reads these rows, one per
    posting, instead of summing millions of credits.

    `cents` equals the sum of the proposal's credits, to the cent; `players` counts the distinct
    players credited by this posting.
    """

    proposal = models.OneToOneField(
        "proposals.PayoutProposal",
        on_delete=models.PROTECT,
        primary_key=True,
        related_name="posted_total",
    )
    posted_at = models.DateTimeField()
    failed_at = models.DateTimeField(help_text="When the tournament failed (the incident).")
    currency = models.CharField(max_length=3)
    rule = models.CharField(max_length=20)
    cause = models.CharField(max_length=20)
    credits = models.PositiveIntegerField()
    players = models.PositiveIntegerField()
    cents = models.BigIntegerField()
    buy_in_refund_cents = models.BigIntegerField()
    next_prize_cents = models.BigIntegerField()
    chip_equity_cents = models.BigIntegerField()
    fee_refund_cents = models.BigIntegerField()
    equal_share_cents = models.BigIntegerField(default=0)
    bounty_refund_cents = models.BigIntegerField(default=0)
    # The same money by the form it took (from the credits' methods): cash paid, tournament
    # money credited, tickets returned (how many, and their value).
    cash_cents = models.BigIntegerField(default=0)
    tournament_money_cents = models.BigIntegerField(default=0)
    ticket_cents = models.BigIntegerField(default=0)
    tickets = models.PositiveIntegerField(default=0)
    # Not paid: the guarantee's overlay the house kept (policies.md, `overlay:
    # returned_to_house`), from the approved proposal's summary.
    overlay_kept_cents = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["posted_at"]
        indexes = [models.Index(fields=["posted_at"], name="posted_total_posted_at")]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    cents=models.F("buy_in_refund_cents")
                    + models.F("next_prize_cents")
                    + models.F("chip_equity_cents")
                    + models.F("fee_refund_cents")
                    + models.F("equal_share_cents")
                    + models.F("bounty_refund_cents")
                ),
                name="posted_total_is_sum_of_six_components",
            ),
            models.CheckConstraint(
                condition=Q(
                    cents=models.F("cash_cents")
                    + models.F("tournament_money_cents")
                    + models.F("ticket_cents")
                ),
                name="posted_total_is_sum_of_methods",
            ),
        ]

    def __str__(self):
        return f"Proposal {self.proposal_id} posted {self.cents} {self.currency}"


def _waiting(job):
    """(what, since) while a queued job waits for the wallet or the database, else None."""
    if job.wallet_unavailable_since is None:
        return None
    return (job.get_waiting_for_display() or "the wallet"), job.wallet_unavailable_since


# The posting job as a job of the toolkit (refunds_admin/jobs): swept when lost or stalled, on
# the database's clock, shown truthfully (queued, running, stalled, waiting, failed, posted).
POSTING_JOBS = register(
    JobKind(
        name="posting",
        model=PostingJob,
        stale_after=lambda: settings.POSTING_STALE_AFTER,
        retry_at="retry_at",
        done=("posted",),
        waiting=_waiting,
    )
)
