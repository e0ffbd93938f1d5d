"""Periodic task: flag incidents whose 30-minute window passed while still open (the work is
`services.flag_overdue_incidents`)."""

from celery import shared_task

from . import services


@shared_task(name="incidents.flag_overdue")
def flag_overdue():
    """Flag each open incident past its window once, and e-mail the managers once."""
    return services.flag_overdue_incidents()
