"""Player statements (an outbox per posted proposal) and staff e-mails.

Statements follow the adapter pattern of design.md convention 13, like posting to the cashier:
the StatementJob and one StatementMessage per credited player are written together once the
proposal is posted; a Celery job sends them with an idempotency key per (proposal, player) that
is the same on every retry, and records each outcome.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone


class Channel(models.TextChoices):
    WEBHOOK = "webhook", "Operator's messaging webhook"
    EMAIL = "email", "E-mail"


class StatementJob(models.Model):
    """The outbox of one posted proposal's statements, and the job's progress."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Sending"
        DONE = "done", "Done"
        FAILED = "failed", "Stopped: needs a manager"

    proposal = models.OneToOneField(
        "proposals.PayoutProposal", on_delete=models.PROTECT, related_name="statement_job"
    )
    channel = models.CharField(max_length=10, choices=Channel.choices)
    endpoint = models.CharField(
        max_length=500, help_text="Where the messages go: the webhook URL or the e-mail backend."
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    total = models.PositiveIntegerField(help_text="Players with an address: messages to send.")
    sent = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    no_address = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(sent__lte=models.F("total")), name="statements_sent_within_total"
            ),
        ]

    def __str__(self):
        return f"Statements of proposal {self.proposal_id}: {self.sent}/{self.total} ({self.state})"

    @property
    def percent(self):
        return 100 if not self.total else (100 * (self.sent + self.failed)) // self.total


class StatementMessage(models.Model):
    """One player's statement for one posted proposal (all their credited entries in it)."""

    class State(models.TextChoices):
        PENDING = "pending", "Waiting to be sent"
        SENDING = "sending", "Being sent"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed: needs a manager"
        NO_ADDRESS = "no_address", "No address"

    # A posted proposal writes one message per credited player (100k at once): both foreign
    # keys are checked once per statement by triggers (migration 0002, refunds_admin/db/ddl.py),
    # not once per row at commit, and neither has an index of its own: (job, state, id) and
    # (proposal, player_id) below start with them.
    job = models.ForeignKey(
        StatementJob,
        on_delete=models.PROTECT,
        related_name="messages",
        db_constraint=False,
        db_index=False,
    )
    proposal = models.ForeignKey(
        "proposals.PayoutProposal",
        on_delete=models.PROTECT,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    player_id = models.CharField(max_length=128)
    screen_name = models.CharField(max_length=128, blank=True)
    entry_ids = models.JSONField(help_text="The player's credited entries, in snapshot order.")
    total_cents = models.BigIntegerField()
    address = models.CharField(
        max_length=254, blank=True, help_text="E-mail address, or the player id for the webhook."
    )
    # Unique because it is made of (proposal, player), one_statement_per_player below; the check
    # holds it to that, so no second unique index is maintained for 100k messages at once.
    idempotency_key = models.CharField(max_length=300)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    remote_id = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["job", "id"]
        constraints = [
            # Each player is told once per proposal.
            models.UniqueConstraint(
                fields=["proposal", "player_id"], name="one_statement_per_player"
            ),
            # The key is services.statement_key(proposal, player), and nothing else.
            models.CheckConstraint(
                condition=Q(
                    idempotency_key=Concat(
                        Value("statement/proposal-"),
                        Cast("proposal_id", models.CharField()),
                        Value("/"),
                        "player_id",
                    )
                ),
                name="statement_key_of_proposal_and_player",
            ),
        ]
        indexes = [models.Index(fields=["job", "state", "id"], name="statement_job_state")]

    def __str__(self):
        return f"{self.idempotency_key} ({self.state})"


class StaffKind(models.TextChoices):
    """The kinds of staff e-mail; each user can turn each off."""

    SUBMITTED = "submitted", "A proposal was submitted for approval (managers)"
    DECIDED = "decided", "My proposal was approved or rejected (preparer)"
    POSTING = "posting", "Posting failed or is stuck (managers)"
    OVERDUE = "overdue", "An incident is overdue: not resumed after 30 minutes (managers)"


class StaffPreference(models.Model):
    """A user's choice for one kind of e-mail; without a row the kind is on."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preferences"
    )
    kind = models.CharField(max_length=20, choices=StaffKind.choices)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "kind"], name="one_preference_per_kind"),
        ]


class HandledEvent(models.Model):
    """An audit event the notifications have been derived from (each handled once)."""

    event = models.OneToOneField(
        "audit.AuditEvent", on_delete=models.PROTECT, primary_key=True, related_name="+"
    )
    handled_at = models.DateTimeField(default=timezone.now)


class StaffNotification(models.Model):
    """One e-mail to one staff member. Unique per (kind, reference, user): sent at most once."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Being sent"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=20, choices=StaffKind.choices)
    reference = models.CharField(
        max_length=100, help_text="What it is about: audit-event-<id> or posting-<id>-stuck-<n>."
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    email = models.EmailField()
    subject = models.CharField(max_length=250)
    body = models.TextField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "reference", "user"], name="one_staff_email_per_reference"
            ),
        ]
        indexes = [models.Index(fields=["state"], name="staff_notification_state")]

    def __str__(self):
        return f"{self.kind} {self.reference} -> {self.email} ({self.state})"
