from django.conf import settings
from django.db import models
from django.db.models import F, Q

from refunds_admin.accounts.credentials import why_not_own_credentials
from refunds_admin.accounts.roles import CAN_DECIDE, has_role
from refunds_admin.jobs.kinds import JobKind, register

# The people whose work or judgement a proposal rests on: the approver (or rejecter) must be none
# of them (four eyes). Each is a foreign key to the user on PayoutProposal.
# - prepared_by, submitted_by: who computed and who sent it;
# - site_wide_confirmed_by: the manager whose site-wide finding chose rule 1 (an incident's own or
#   the outage's, which each incident carries);
# - declared_not_resumable_by: the manager who declared the tournament not resumable (the
#   incident's own declaration or the outage's "rest not resumable"), which fixed the timing;
# - policy_changed_by: the manager who changed the tournament's cancellation policy;
# - site_wide_applied_by: the manager who added the tournament to an outage after its site-wide
#   finding, which applied that finding (and rule 1) to it.
RULE_CHOOSERS = (
    "site_wide_confirmed_by",
    "declared_not_resumable_by",
    "policy_changed_by",
    "site_wide_applied_by",
)
# Who supplied the facts the engine computed it from, recorded when prepared:
# - snapshot_imported_by: who imported the snapshot it was computed from (chips, prize table,
#   entries, the policy a re-import names);
# - failure_recorded_by: who recorded the incident's failure time (for an outage, who recorded
#   it or added the tournament to it), which chooses the rule as much as a finding does.
# Like the rule's choosers, they may send it back but not approve it.
FACT_SUPPLIERS = ("snapshot_imported_by", "failure_recorded_by")
NOT_THE_DECIDER = ("prepared_by", "submitted_by", *RULE_CHOOSERS, *FACT_SUPPLIERS)
_WHY = {
    "prepared_by": "prepared",
    "submitted_by": "submitted",
    "site_wide_confirmed_by": "confirmed the site-wide finding that chose the rule of",
    "declared_not_resumable_by": "declared not resumable the tournament of",
    "policy_changed_by": "changed the cancellation policy that chose the rule of",
    "site_wide_applied_by": "applied the outage's site-wide finding that chose the rule of",
    "snapshot_imported_by": "imported the snapshot computed into",
    "failure_recorded_by": "recorded the failure time that chose the rule of",
}


class ProposalQuerySet(models.QuerySet):
    def not_resting_on(self, user):
        """Proposals the user did not prepare, submit or choose the rule of (four eyes)."""
        for field in NOT_THE_DECIDER:
            self = self.exclude(**{field: user})
        return self

    def awaiting_decision_by(self, user):
        """Submitted proposals this user may approve or reject: none when they may not decide
        at all, otherwise those they did not prepare, submit or choose the rule of."""
        if not has_role(user, CAN_DECIDE):
            return self.none()
        return self.filter(status=PayoutProposal.Status.SUBMITTED).not_resting_on(user)


def _not_the_approver(field):
    return models.CheckConstraint(
        condition=Q(approved_by__isnull=True)
        | Q(**{f"{field}__isnull": True})
        | ~Q(approved_by=F(field)),
        name=f"approver_is_not_{field.removesuffix('_by')}",
    )


class PayoutProposal(models.Model):
    """The engine's answer for one incident, stored so that what was approved is what is posted.

    `fingerprint` is the SHA-256 of the canonical lines; approval quotes the fingerprint the
    manager saw and posting refuses lines that no longer match it.
    """

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        REJECTED = "rejected", "Rejected"
        # Prepared again: a newer version replaced this draft (or submission); kept to compare.
        SUPERSEDED = "superseded", "Replaced by a newer version"
        APPROVED = "approved", "Approved"
        POSTING = "posting", "Posting"
        POSTED = "posted", "Posted"
        FAILED = "failed", "Posting failed"

    incident = models.ForeignKey(
        "incidents.Incident", on_delete=models.PROTECT, related_name="proposals"
    )
    snapshot = models.ForeignKey(
        "tournaments.Snapshot", on_delete=models.PROTECT, related_name="proposals"
    )
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)

    rule = models.CharField(max_length=20)
    currency = models.CharField(max_length=3)
    failed_at = models.DateTimeField(help_text="The incident timing the engine was given.")
    site_wide_issue = models.BooleanField()
    summary = models.JSONField(help_text="The payout-proposal/1 summary, amounts as strings.")
    warnings = models.JSONField(default=list, blank=True)
    fingerprint = models.CharField(max_length=64)
    # The cancellation policy version computed under (the tournament's when prepared), and its
    # id, number and SHA-256 as the engine's proposal names them: the fingerprint covers the hash,
    # and a replay recomputes under this very version.
    policy_version = models.ForeignKey(
        "policies.PolicyVersion", on_delete=models.PROTECT, related_name="proposals"
    )
    policy_id = models.CharField(max_length=63)
    policy_version_number = models.PositiveIntegerField()
    policy_sha256 = models.CharField(max_length=64)
    total_cents = models.BigIntegerField()
    lines_count = models.PositiveIntegerField()

    prepared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    prepared_at = models.DateTimeField()
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Who chose the rule, recorded when prepared from the incident (and the tournament): the
    # approver may be none of them (RULE_CHOOSERS above; constraints below).
    site_wide_confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    declared_not_resumable_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    policy_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    site_wide_applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Who supplied its facts (FACT_SUPPLIERS above; constraints below).
    snapshot_imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    failure_recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_fingerprint = models.CharField(max_length=64, blank=True)
    # The posting order, written with the approval (the outbox row of the cashier adapter, see
    # docs/posting.md): the wallet the approved money goes to and that wallet's identity, taken
    # from the approving process's settings. The ledger posts only there, and a process
    # configured for another wallet refuses to touch the job.
    wallet = models.CharField(
        max_length=10,
        choices=[("ledger", "The app's own ledger"), ("cashier", "The operator's cashier")],
        blank=True,
        help_text="Where the approved credits are posted: 'ledger' or 'cashier'.",
    )
    wallet_identity = models.CharField(
        max_length=500,
        blank=True,
        help_text="The cashier's base URL (CASHIER_URL) at approval; empty for the ledger.",
    )
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    rejected_at = models.DateTimeField(null=True, blank=True)
    rejection_reason = models.TextField(blank=True)
    figures = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the approver reads beside the total, computed when prepared "
        "(proposals/figures.py): pool reconciliation, distribution, top payouts, capped "
        "entries, changes since the previous version; amounts in cents.",
    )

    objects = ProposalQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["incident", "version"], name="proposal_version_unique"),
            # Four eyes: the approver neither prepared nor submitted the proposal.
            models.CheckConstraint(
                condition=Q(approved_by__isnull=True) | ~Q(approved_by=F("prepared_by")),
                name="approver_is_not_preparer",
            ),
            models.CheckConstraint(
                condition=Q(approved_by__isnull=True)
                | Q(submitted_by__isnull=True)
                | ~Q(approved_by=F("submitted_by")),
                name="approver_is_not_submitter",
            ),
            # ... nor chose its rule.
            *(_not_the_approver(field) for field in RULE_CHOOSERS),
            # ... nor supplied its facts.
            *(_not_the_approver(field) for field in FACT_SUPPLIERS),
            models.CheckConstraint(
                condition=~Q(status__in=["approved", "posting", "posted", "failed"])
                | (Q(approved_by__isnull=False) & Q(approved_fingerprint=F("fingerprint"))),
                name="approved_proposal_names_its_fingerprint",
            ),
            # At most one live proposal per incident: a draft prepared again is superseded by a new version.
            models.UniqueConstraint(
                fields=["incident"],
                condition=~Q(status__in=["rejected", "superseded"]),
                name="one_live_proposal_per_incident",
            ),
            models.CheckConstraint(
                condition=Q(total_cents__gte=0), name="proposal_total_not_negative"
            ),
            # An approved proposal names the wallet it is paid into (and a cashier its URL).
            models.CheckConstraint(
                condition=~Q(status__in=["approved", "posting", "posted", "failed"])
                | Q(wallet="ledger", wallet_identity="")
                | (Q(wallet="cashier") & ~Q(wallet_identity="")),
                name="approved_proposal_names_its_wallet",
            ),
        ]

    def __str__(self):
        return f"Proposal {self.pk} v{self.version} ({self.get_status_display()})"

    def rests_on(self, user, people=NOT_THE_DECIDER):
        """Why `user` may not approve this proposal (four eyes), or "" when they may: they
        prepared or submitted it, chose its rule or supplied its facts."""
        for field in people:
            if user.pk is not None and getattr(self, f"{field}_id") == user.pk:
                # Who prepared or submitted it may neither approve nor reject it; who chose its
                # rule may still send it back (why_not_rejected_by): the message says which.
                decision = (
                    "approve it or reject it"
                    if field in ("prepared_by", "submitted_by")
                    else "approve it"
                )
                return (
                    f"{user.get_username()} {_WHY[field]} proposal {self.pk}; another manager "
                    f"must {decision} (four eyes)."
                )
        return ""

    def why_not_decided_by(self, user):
        """Why `user` may not approve this proposal, or "" when they may: a manager, not one of
        the people it rests on, whose sign-in is their own (accounts.credentials). The status is
        the caller's to check."""
        if not has_role(user, CAN_DECIDE):
            return f"{getattr(user, 'username', 'anonymous')} may not decide on proposals."
        return self.rests_on(user) or why_not_own_credentials(user)

    def may_be_decided_by(self, user):
        """Four eyes, in one place: every view, service, batch and the dashboard ask this; the
        database's constraints are the backstop."""
        return self.status == self.Status.SUBMITTED and not self.why_not_decided_by(user)

    def why_not_rejected_by(self, user):
        """Sending a proposal back moves no money: any manager but its preparer and submitter."""
        if not has_role(user, CAN_DECIDE):
            return f"{getattr(user, 'username', 'anonymous')} may not decide on proposals."
        return self.rests_on(user, ("prepared_by", "submitted_by"))

    def may_be_rejected_by(self, user):
        return self.status == self.Status.SUBMITTED and not self.why_not_rejected_by(user)

    def may_be_withdrawn_by(self, user):
        """Only the submitter takes a submission back (to correct it before anyone decides)."""
        return (
            self.status == self.Status.SUBMITTED
            and user.pk is not None
            and self.submitted_by_id == user.pk
        )


# The proposals of an incident that are no longer its live one: rejected, or replaced by a newer
# version prepared again.
NOT_LIVE = (PayoutProposal.Status.REJECTED, PayoutProposal.Status.SUPERSEDED)


class PayoutLine(models.Model):
    """One entry's line of a proposal, in snapshot order. Eliminated entries get a zero line."""

    # Written 100k rows at a time by COPY: the foreign key is checked once per statement by a
    # trigger (migration 0002, refunds_admin/db/) rather than once per row, and there is no
    # separate index on proposal_id because the key (proposal, position) starts with it.
    proposal = models.ForeignKey(
        PayoutProposal,
        on_delete=models.CASCADE,
        related_name="lines",
        db_index=False,
        db_constraint=False,
    )
    position = models.PositiveIntegerField()
    entry_id = models.CharField(max_length=128)
    player_id = models.CharField(max_length=128)
    # No screen name: a line's is its entry's, the snapshot's entry at the same position
    # (tournaments.Entry; read with the line where shown: lines.with_screen_names). Copied onto
    # every line, 128 characters of it cost a prepare more than any other column (migration
    # 0018, docs/performance.md). The entry, player and amounts stay: posting and the
    # fingerprint read them from the lines alone.
    status = models.CharField(max_length=10)
    chips = models.BigIntegerField()
    buy_in_refund_cents = models.BigIntegerField()
    next_prize_cents = models.BigIntegerField()
    chip_equity_cents = models.BigIntegerField()
    fee_refund_cents = models.BigIntegerField()
    total_cents = models.BigIntegerField()
    capped = models.BooleanField(default=False)
    # The policy's components beyond payout-rules.md (policies.md): the line's equal share of
    # the equity pool, and the bounty refunded (the bounty on an active head under rule 2, the
    # knockout part paid under rule 1). Zero where they do not apply; database defaults too,
    # for COPY writers that do not name them.
    equal_share_cents = models.BigIntegerField(default=0, db_default=0)
    bounty_refund_cents = models.BigIntegerField(default=0, db_default=0)
    # A rule-1 line returned in the form paid (refund_form "as_paid", some part not cash): its
    # entry's paid_with in order, [{"method", "amount_cents", "ticket_id"?}]; null when the
    # whole line is paid in cash. A ticket appears once in the whole snapshot, so
    # (proposal, entry, ticket_id) -- or, for other methods, (proposal, entry, method, index in
    # this list) -- is a stable key for crediting each part once (docs/formats.md).
    refunds = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["proposal", "position"]
        constraints = [
            # On PostgreSQL this one is the table's primary key, and `id` has no index: one
            # key is built per partition, not two saying the same (migration 0015). A line's
            # entry is its snapshot's entry at the same position, so one line per position is
            # one line per entry: the entries' own unique (snapshot, entry_id) says the rest,
            # and an entry's line is found through it (lines.entry_line; migration 0017).
            models.UniqueConstraint(fields=["proposal", "position"], name="line_position_unique"),
            models.CheckConstraint(
                condition=Q(buy_in_refund_cents__gte=0)
                & Q(next_prize_cents__gte=0)
                & Q(chip_equity_cents__gte=0)
                & Q(fee_refund_cents__gte=0),
                name="line_amounts_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(equal_share_cents__gte=0) & Q(bounty_refund_cents__gte=0),
                name="line_policy_amounts_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(
                    total_cents=F("buy_in_refund_cents")
                    + F("next_prize_cents")
                    + F("chip_equity_cents")
                    + F("fee_refund_cents")
                    + F("equal_share_cents")
                    + F("bounty_refund_cents")
                ),
                name="line_total_is_sum_of_six",
            ),
        ]
        # The breakdown's lookup and sort indexes are the partitions' own: see
        # LINE_PARTITION_INDEXES below.


# Each proposal's lines are one partition of this table (PostgreSQL; refunds_admin/db/,
# docs/performance.md). These indexes are built on each partition after its COPY, and only
# there: a partition holds one proposal, so they need no proposal_id column in front, which
# makes each one narrower and a third quicker to build (its first column varies, so PostgreSQL
# sorts on abbreviated keys). Every query that names the proposal is planned on its partition
# alone and finds them. The search by player, entry or screen name needs none here: it runs on
# the snapshot's entries (web/queries.proposal_lines). SQLite keeps plain indexes (migration 0009).
LINE_PARTITION_INDEXES = (
    # The breakdown sorted by chips or by total: one keyset page per index scan.
    "(chips, position)",
    "(total_cents, position)",
    # "Capped only": the few entries whose chip equity hit the first-place cap, found without
    # reading every line. Partial, so 100k uncapped lines add nothing to it.
    "(position) WHERE capped",
    # "Eliminated only", in position order: without it PostgreSQL walks the position key and
    # skips every active line before the first eliminated one (usually all of them: they come
    # first), a page that grew with the proposal (docs/performance.md, "the lead's reruns on
    # this evening's merged tree"). Partial, so the active lines add nothing to it.
    "(position) WHERE status = 'eliminated'",
)


class OutagePrepareRun(models.Model):
    """One run of the outage's batch prepare (a Celery job): its progress bar and its results.

    `done` of `total` incidents processed so far; each has an OutagePrepareResult.
    """

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    outage = models.ForeignKey(
        "outages.Outage", on_delete=models.PROTECT, related_name="prepare_runs"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    requested_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the job (after each tournament)."
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One batch prepare at a time per outage.
            models.UniqueConstraint(
                fields=["outage"],
                condition=Q(state__in=["queued", "running"]),
                name="one_running_prepare_per_outage",
            ),
            models.CheckConstraint(
                condition=Q(done__lte=F("total")), name="prepare_done_within_total"
            ),
        ]

    def __str__(self):
        return f"Prepare run {self.pk} of outage {self.outage_id}: {self.done}/{self.total}"


class OutagePrepareResult(models.Model):
    """What the batch prepare did for one tournament of the outage."""

    class Outcome(models.TextChoices):
        PREPARED = "prepared", "Prepared and submitted"
        UNCHANGED = "unchanged", "Already up to date"
        REFUSED = "refused", "Refused"
        SKIPPED = "skipped", "Not cancelled: nothing to prepare"

    run = models.ForeignKey(OutagePrepareRun, on_delete=models.CASCADE, related_name="results")
    incident = models.ForeignKey("incidents.Incident", on_delete=models.PROTECT, related_name="+")
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    proposal = models.ForeignKey(
        PayoutProposal, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    message = models.TextField(blank=True)
    problems = models.JSONField(default=list, blank=True)
    seconds = models.FloatField(default=0, help_text="Time spent on this tournament.")

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "incident"], name="one_result_per_incident"),
        ]


# The batch prepare as a job of the toolkit (refunds_admin/jobs): claimed by compare-and-set,
# beating while it runs, taken over by the sweeper once stalled, shown truthfully.
PREPARE_JOBS = register(
    JobKind(
        name="prepare",
        model=OutagePrepareRun,
        stale_after=lambda: settings.OUTAGE_PREPARE_STALE_AFTER,
        queued_at="requested_at",
    )
)
