"""Periodic task: flag incidents whose 30-minute window passed while still open.

The policy cancels a tournament that has not resumed 30 minutes after the failure; staff must
then cancel it (or declare it not resumable) and prepare the refunds. This task does not cancel
anything itself: it flags the incident once and e-mails the managers once.
"""

import logging
from functools import partial

from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from refunds_admin.accounts.roles import MANAGER
from refunds_admin.audit.services import record

from .models import RESUME_WINDOW, Incident

log = logging.getLogger(__name__)


def _manager_emails():
    return list(
        get_user_model()
        .objects.filter(groups__name=MANAGER, is_active=True)
        .exclude(email="")
        .values_list("email", flat=True)
        .distinct()
    )


def _notify(incident_id):
    incident = Incident.objects.select_related("tournament").get(pk=incident_id)
    recipients = _manager_emails()
    if not recipients:
        log.warning("incident %s is overdue but no manager has an e-mail address", incident_id)
        return
    minutes = int((timezone.now() - incident.failed_at).total_seconds() // 60)
    send_mail(
        subject=f"Overdue incident: {incident.tournament.external_id} not resumed after 30 minutes",
        message=(
            f"Tournament {incident.tournament.external_id} ({incident.tournament.name}) failed at "
            f"{incident.failed_at:%Y-%m-%d %H:%M} UTC, {minutes} minutes ago, and play has not "
            "resumed. Under the policy it is cancelled: please cancel the incident and have the "
            "refund proposal prepared."
        ),
        from_email=None,
        recipient_list=recipients,
    )


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
            # The e-mail goes out only if the flag committed: never twice, never for nothing.
            transaction.on_commit(partial(_notify, incident.pk))
        flagged.append(incident.pk)
    return flagged
