"""A cancellation policy is data: a named `cancellation-policy/1` document with versions.

A version is proposed by a manager, approved by another manager with a second factor, and from
then on never changes (the database refuses it on PostgreSQL, migration 0002): proposals record
the version and the SHA-256 of its canonical JSON, and a replay years later reads that very
document.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from refunds_admin.errors import Refused
from refunds_admin.payouts.policy import parse_policy
from refunds_admin.recent import Recent

if TYPE_CHECKING:
    from refunds_admin.payouts.policy import Policy as EnginePolicy


class Policy(models.Model):
    """A policy by its id, e.g. `ultimatepoker-2026` (the id snapshots name in tournament.policy)."""

    id = models.CharField(primary_key=True, max_length=63)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(id__regex=r"^[a-z0-9][a-z0-9-]{0,62}$"), name="policy_id_is_a_slug"
            ),
        ]

    def __str__(self) -> str:
        return self.id

    def current_version(self) -> PolicyVersion | None:
        """The approved version with the highest number: what a tournament under this policy
        gets when imported."""
        return (
            self.versions.filter(status=PolicyVersion.Status.APPROVED).order_by("-version").first()
        )


class PolicyVersion(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="versions")
    version = models.PositiveIntegerField()
    # The canonical JSON (keys sorted, no spaces, UTF-8) the engine hashes: `sha256` is its hash.
    document = models.TextField()
    sha256 = models.CharField(max_length=64)
    title = models.CharField(max_length=255)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    # Not stored: the "version" the proposed document gave, which the app replaces by the next
    # number (propose_policy_version), so that the page can tell the proposer.
    numbered_in_document: object = None
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    proposed_at = models.DateTimeField()
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    rejected_at = models.DateTimeField(null=True, blank=True)
    rejection_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["policy", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "version"], name="policy_version_unique"),
            models.CheckConstraint(condition=Q(version__gte=1), name="policy_version_from_one"),
            # Four eyes: the approver is not the proposer (the presets have no proposer).
            models.CheckConstraint(
                condition=Q(approved_by__isnull=True)
                | Q(proposed_by__isnull=True)
                | ~Q(approved_by=models.F("proposed_by")),
                name="policy_approver_is_not_proposer",
            ),
            models.CheckConstraint(
                condition=~Q(status="approved") | Q(approved_at__isnull=False),
                name="approved_policy_version_has_approval",
            ),
            # At most one version of a policy waits for a decision at a time.
            models.UniqueConstraint(
                fields=["policy"], condition=Q(status="proposed"), name="one_proposed_version"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.policy_id} v{self.version}"

    # SQLite has no trigger here (PostgreSQL's refuses it in the database, migration 0002):
    # the same rule in Python for the default mode.
    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            stored = PolicyVersion.objects.filter(pk=self.pk).values(*_FROZEN).first()
            if stored is not None and stored["status"] == self.Status.APPROVED:
                if any(
                    getattr(self, f if f != "policy" else "policy_id") != stored[f] for f in _FROZEN
                ):
                    raise Refused(f"Policy version {self} is approved: it never changes.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        if PolicyVersion.objects.filter(pk=self.pk, status=self.Status.APPROVED).exists():
            raise Refused(f"Policy version {self} is approved: it is never deleted.")
        return super().delete(*args, **kwargs)

    @property
    def label(self) -> str:
        """How screens name it: "ultimatepoker-2026 v1"."""
        return f"{self.policy_id} v{self.version}"

    def engine(self) -> EnginePolicy:
        """The engine's Policy for this version (parsed from the stored canonical JSON)."""
        # Kept by the hash of the document as read now, not by the `sha256` column: a document
        # rewritten behind the app's back (the column left alone) is parsed afresh, so that a
        # replay in a long-running process computes under what is stored and sees the change.
        digest = hashlib.sha256(self.document.encode("utf-8")).hexdigest()
        return _PARSED.get(digest, lambda: parse_policy(self.document))


# A version never changes once approved, so its parsed form is kept by the document's hash.
_PARSED: Recent[str, EnginePolicy] = Recent(size=16)

_FROZEN = ("policy", "version", "document", "sha256", "title", "status")


class DefaultPolicy(models.Model):
    """The app's default policy (one row): a snapshot without `tournament.policy` gets its
    current approved version."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="+")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "default policy"
        constraints = [models.CheckConstraint(condition=Q(id=1), name="one_default_policy")]

    def __str__(self) -> str:
        return f"default: {self.policy_id}"
