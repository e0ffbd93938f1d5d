from django.conf import settings
from django.db import models
from django.db.models import F
from django.db.models.functions import Lower
from django.utils import timezone


class AuditEvent(models.Model):
    """One state change: who, when, what, before, after, why. Append-only.

    Written by `audit.services.record()` inside the same transaction as the change it describes.
    On PostgreSQL a trigger refuses UPDATE and DELETE on this table (migration 0002), and the app's
    database role may only insert and read it (docs/security.md). Tamper-evident: each event
    carries the hash of the one before it (`prev_hash`) and its own (`hash`, over its contents and
    `prev_hash`), so an event changed, removed or slipped in between breaks the chain;
    `manage.py verify_audit` walks it (audit/chain.py).
    """

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Empty for the system (a periodic task or the posting job).",
    )
    actor_name = models.CharField(
        max_length=150, help_text="The username at the time, or 'system'."
    )
    action = models.CharField(
        max_length=64, db_index=True, help_text="Namespaced, e.g. proposal.approved"
    )
    object_type = models.CharField(max_length=40)
    object_id = models.CharField(max_length=64)
    tournament_external_id = models.CharField(max_length=128, blank=True, db_index=True)
    player_ids = models.JSONField(
        default=list, blank=True, help_text="Players this event concerns, for lookup."
    )
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    prev_hash = models.CharField(
        max_length=64, blank=True, help_text="The hash of the event before this one."
    )
    hash = models.CharField(
        max_length=64,
        blank=True,
        help_text="HMAC-SHA256 under the chain's key over this event and prev_hash.",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["object_type", "object_id"]),
            # The history's sortable columns, each ending with the id that breaks its ties, so
            # a page of 100k events is read from the index at the cursor (web/paging.py).
            models.Index(fields=["created_at", "id"], name="audit_when_id"),
            models.Index(fields=["action", "id"], name="audit_action_id"),
            models.Index(fields=["object_type", "object_id", "id"], name="audit_object_id"),
            models.Index(fields=["tournament_external_id", "id"], name="audit_tournament_id"),
            # The history's tournament search, in any case (web/queries.audit_events).
            models.Index(Lower("tournament_external_id"), F("id"), name="audit_tournament_lower"),
        ]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.object_type}:{self.object_id}"
