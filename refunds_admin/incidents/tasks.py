"""Periodic task: flag incidents whose 30-minute window passed while still open.

The policy cancels a tournament that has not resumed 30 minutes after the failure; staff must
then cancel it (or declare it not resumable) and prepare the refunds. This task does not cancel
anything itself: it flags the incident once (audited as incident.overdue_flagged); the
notifications app e-mails the managers once from that event.
"""

import logging

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from refunds_admin.audit.services import record

from .models import RESUME_WINDOW, Incident

log = logging.getLogger(__name__)


@shared_task(name="incidents.flag_overdue")
def flag_overdue():
    """Flag each open incident past its window once, and e-mail the managers once."""
    cutoff = timezone.now() - RESUME_WINDOW
    flagged = []
    candidates = Incident.objects.filter(
        status=Incident.Status.OPEN, failed_at__lte=cutoff, overdue_notified_at__isnull=True
    ).select_related("tournament")
    for incident in candidates:
        with transaction.atomic():
            # Compare-and-set: two beat runs (or two workers) flag an incident only once.
            now = timezone.now()
            changed = Incident.objects.filter(
                pk=incident.pk, status=Incident.Status.OPEN, overdue_notified_at__isnull=True
            ).update(overdue_notified_at=now)
            if not changed:
                continue
            record(
                "incident.overdue_flagged",
                incident,
                actor=None,
                after={
                    "overdue_notified_at": now.isoformat(),
                    "deadline": incident.deadline.isoformat(),
                },
                tournament=incident.tournament,
            )
            # The managers' e-mail is derived from this audit event once it has committed
            # (notifications, a higher layer): never twice, never for nothing.
        flagged.append(incident.pk)
    return flagged
