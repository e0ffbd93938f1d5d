import zlib

from django.conf import settings
from django.db import models
from django.db.models import Q

# The formats a snapshot may use beyond a freeze-out paid in cash (Snapshot.formats).
KNOCKOUT = "knockout"  # tournament.bounty: bounty paid, bounty on the head, bounties won
REBUYS = "rebuys"  # some entry has rebuys_paid or rebuy_fees_paid
PAID_WITH = "paid_with"  # some entry says how it paid (tickets, tournament money)
FORMATS = (KNOCKOUT, REBUYS, PAID_WITH)


class Tournament(models.Model):
    """A tournament as the game platform knows it, identified by its `external_id`.

    The nominal fields mirror the current snapshot; every snapshot version is kept.
    """

    external_id = models.CharField(max_length=128, unique=True)
    name = models.CharField(max_length=255)
    currency = models.CharField(max_length=3)
    buy_in_cents = models.BigIntegerField()
    fee_cents = models.BigIntegerField()
    starts_at = models.DateTimeField(help_text="When play actually began (cards in the air).")
    current_snapshot = models.ForeignKey(
        "Snapshot", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The cancellation policy version that applies: the one the snapshot named (or the default
    # policy's) at the first import, or the one a manager changed it to before approval.
    policy_version = models.ForeignKey(
        "policies.PolicyVersion", on_delete=models.PROTECT, related_name="tournaments"
    )
    # The manager who last changed the policy (None: as imported). That manager does not also
    # approve the proposal computed under it (four eyes).
    policy_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    policy_changed_at = models.DateTimeField(null=True, blank=True)
    frozen_at = models.DateTimeField(
        null=True, blank=True, help_text="Set when a proposal is approved: no re-import after that."
    )
    # The tournament's format, as its current snapshot gives it (policies.md, "Snapshot fields
    # for tournament formats"): a knockout names the bounty part of one entry's price; a
    # guarantee is the advertised prize pool; `formats` lists what the entries use, so that the
    # screens show knockout, rebuy and payment columns only where they mean something.
    bounty_cents = models.BigIntegerField(
        null=True, blank=True, help_text="Knockout part of one entry's price; empty: no knockout."
    )
    guarantee_cents = models.BigIntegerField(
        null=True, blank=True, help_text="The advertised guaranteed prize pool, if any."
    )
    formats = models.JSONField(
        default=list,
        blank=True,
        help_text='What the current snapshot uses: "knockout", "rebuys", "paid_with".',
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-starts_at", "-id"]
        # The list's sortable columns with the id that breaks their ties (web/paging.py); the
        # external id has its unique index. Entries and snapshot version are on the snapshot.
        indexes = [
            models.Index(fields=["starts_at", "id"], name="tournament_started_id"),
            models.Index(fields=["buy_in_cents", "fee_cents", "id"], name="tournament_buy_in_id"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(buy_in_cents__gte=0) & Q(fee_cents__gte=0),
                name="tournament_amounts_not_negative",
            ),
            models.CheckConstraint(
                condition=(Q(bounty_cents__isnull=True) | Q(bounty_cents__gte=0))
                & (Q(guarantee_cents__isnull=True) | Q(guarantee_cents__gte=0)),
                name="tournament_format_amounts_not_negative",
            ),
        ]

    def __str__(self):
        return f"{self.external_id} {self.name}"

    uses_knockout = property(lambda self: KNOCKOUT in self.formats)
    uses_rebuys = property(lambda self: REBUYS in self.formats)
    uses_paid_with = property(lambda self: PAID_WITH in self.formats)


class Snapshot(models.Model):
    """One imported `tournament-snapshot/1` document, exactly as received. Immutable.

    Re-importing a tournament adds a version; proposals name the version they were computed from,
    so a replay years later reads the very same document.
    """

    # Not a column: True on the instance an import returns when the document was exactly the
    # current version's (nothing imported), for the upload page to say so.
    already_current = False

    class Source(models.TextChoices):
        UPLOAD = "upload", "Uploaded JSON"
        CSV = "csv", "CSV form"
        API = "api", "API"
        CLI = "cli", "Command line"
        DEMO = "demo", "Demo data"

    tournament = models.ForeignKey(Tournament, on_delete=models.PROTECT, related_name="snapshots")
    version = models.PositiveIntegerField()
    # The snapshot JSON as received, byte for byte (UTF-8), compressed by zlib while the import
    # validates it: the database then stores 2 MB instead of compressing 14 MB itself while
    # the import waits (docs/performance.md). `document` gives the text back.
    document_zlib = models.BinaryField(editable=False)
    # The document once validated, in a compact form (payouts/stored.py), written with it: a
    # proposal is prepared from this in a tenth of the time of parsing the document again.
    # Derived data; the document stays the record, and replays parse the document.
    parsed = models.BinaryField(null=True, editable=False)
    sha256 = models.CharField(max_length=64)
    source = models.CharField(max_length=10, choices=Source.choices)
    # What this version uses of KNOCKOUT, REBUYS, PAID_WITH: the proposals computed from it
    # show those columns only when it does.
    formats = models.JSONField(default=list, blank=True)
    entries_count = models.PositiveIntegerField()
    active_count = models.PositiveIntegerField()
    # This version's `tournament.starts_at` (the tournament row keeps the current version's): the
    # incident page compares the start of two versions without reading either's entries.
    starts_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When play started, as this version says (empty for a version imported "
        "before the start was kept here: it is read from its document then).",
    )
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tournament", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["tournament", "version"], name="snapshot_version_unique"
            ),
        ]

    def __str__(self):
        return f"{self.tournament.external_id} v{self.version}"

    uses_knockout = property(lambda self: KNOCKOUT in self.formats)
    uses_rebuys = property(lambda self: REBUYS in self.formats)
    uses_paid_with = property(lambda self: PAID_WITH in self.formats)

    @property
    def document(self) -> str:
        """The document exactly as received."""
        return zlib.decompress(bytes(self.document_zlib)).decode("utf-8")


class PrizePlace(models.Model):
    """One paid place of a snapshot's prize table (ranges are expanded to one row per place)."""

    # Some platforms send one prize row per paid place (50k rows for a large field): like the
    # entries, the foreign key is checked once per COPY by a trigger (migration 0005), and the
    # unique (snapshot, place) index serves lookups by snapshot.
    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.CASCADE,
        related_name="prize_places",
        db_index=False,
        db_constraint=False,
    )
    place = models.PositiveIntegerField()
    amount_cents = models.BigIntegerField(
        help_text="Cash value; a non-cash prize counts at its stated value."
    )
    non_cash = models.BooleanField(default=False)
    description = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["snapshot", "place"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "place"], name="prize_place_unique"),
            models.CheckConstraint(
                condition=Q(amount_cents__gte=0), name="prize_amount_not_negative"
            ),
            models.CheckConstraint(condition=Q(place__gte=1), name="prize_place_from_one"),
        ]


class Entry(models.Model):
    """One entry of a snapshot. A player who re-entered holds several entries, at most one active."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        ELIMINATED = "eliminated", "Eliminated"

    # Written 100k rows at a time by COPY: the foreign key is checked once per statement by a
    # trigger (migration 0002, refunds_admin/db/) rather than once per row, and there is no
    # separate index on snapshot_id because the unique (snapshot, entry_id) index starts with it.
    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.CASCADE,
        related_name="entries",
        db_index=False,
        db_constraint=False,
    )
    position = models.PositiveIntegerField(help_text="Order in the snapshot, which proposals keep.")
    entry_id = models.CharField(max_length=128)
    player_id = models.CharField(max_length=128)
    screen_name = models.CharField(max_length=128, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices)
    chips = models.BigIntegerField(default=0)
    buy_in_paid_cents = models.BigIntegerField()
    fee_paid_cents = models.BigIntegerField()
    finish_place = models.PositiveIntegerField(null=True, blank=True)
    prize_awarded_cents = models.BigIntegerField(null=True, blank=True)
    # A database default too: COPY writers that do not name the column still insert "".
    email = models.CharField(
        max_length=254,
        blank=True,
        default="",
        db_default="",
        help_text="Where the player's statement may be e-mailed (optional snapshot field).",
    )
    # Formats (policies.md): zero when the snapshot does not give them. Database defaults too,
    # for COPY writers that do not name the columns.
    rebuys_paid_cents = models.BigIntegerField(
        default=0, db_default=0, help_text="What the entry's rebuys and add-ons put in the pool."
    )
    rebuy_fees_paid_cents = models.BigIntegerField(default=0, db_default=0)
    bounty_paid_cents = models.BigIntegerField(
        default=0, db_default=0, help_text="The knockout part this entry paid."
    )
    bounty_cents = models.BigIntegerField(
        default=0, db_default=0, help_text="Active entries: the bounty on the head at the failure."
    )
    bounties_won_cents = models.BigIntegerField(null=True, blank=True)
    # How the entry paid, when the snapshot says: [{"method", "amount_cents", "ticket_id"?}]
    # in the snapshot's order (the order refunds are returned in). Null: all in cash.
    paid_with = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["snapshot", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "entry_id"], name="entry_id_unique_per_snapshot"
            ),
            # On PostgreSQL this one is the table's primary key, and `id` has no index: one key
            # is built per partition at import, not two saying the same (migration 0014).
            models.UniqueConstraint(fields=["snapshot", "position"], name="entry_position_unique"),
            models.UniqueConstraint(
                fields=["snapshot", "player_id"],
                condition=Q(status="active"),
                name="one_active_entry_per_player",
            ),
            models.CheckConstraint(
                condition=Q(buy_in_paid_cents__gte=0) & Q(fee_paid_cents__gte=0) & Q(chips__gte=0),
                name="entry_amounts_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(rebuys_paid_cents__gte=0)
                & Q(rebuy_fees_paid_cents__gte=0)
                & Q(bounty_paid_cents__gte=0)
                & Q(bounty_cents__gte=0)
                & (Q(bounties_won_cents__isnull=True) | Q(bounties_won_cents__gte=0)),
                name="entry_format_amounts_not_negative",
            ),
            # An eliminated entry's head carries no bounty any more.
            models.CheckConstraint(
                condition=Q(status="active") | Q(bounty_cents=0),
                name="entry_bounty_only_on_active_heads",
            ),
            models.CheckConstraint(
                condition=(Q(status="active") & Q(chips__gt=0))
                | (Q(status="eliminated") & Q(chips=0)),
                name="entry_chips_match_status",
            ),
        ]
        # Besides the constraints' own, three expression indexes (PostgreSQL, migrations 0003
        # and 0012): lower(player_id) in the C collation, the first 16 characters of
        # lower(screen_name), lower(email). They serve the search of a
        # snapshot's entries and of a proposal's lines (the same rows, position for position),
        # the player lookup across tournaments and the history's "events of this player". Each
        # index is paid for at every import (docs/performance.md).


class ApiClient(models.Model):
    """A caller of POST /api/snapshots (the game platform). Only a hash of the token is kept."""

    name = models.CharField(max_length=100, unique=True)
    token_prefix = models.CharField(
        max_length=12, help_text="First characters, to tell tokens apart."
    )
    token_sha256 = models.CharField(max_length=64, unique=True)
    acting_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The client acts as this user, audited as such: support or manager to import "
        "and record, any role to read.",
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.name} ({self.token_prefix}…)"
