"""Walk the audit's hash chain: exit 0 when every event is as written, 1 at the first break."""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from refunds_admin.audit import chain
from refunds_admin.audit.models import AuditEvent


class Command(BaseCommand):
    help = "Check the audit's hash chain; exits 1 naming the first event that breaks it."

    def handle(self, *args, **options):
        # In one transaction, so the server-side cursor goes with it when the walk stops early.
        with transaction.atomic():
            events = AuditEvent.objects.order_by("id").iterator(chunk_size=5000)
            count, unchained, broken = chain.verify(events)
            del events
        if broken is not None:
            event_id, what = broken
            raise CommandError(
                f"the audit chain is broken at event {event_id}: it {what} "
                f"({count - 1} events before it are intact)",
                returncode=1,
            )
        before = f" ({unchained} written before the chain began)" if unchained else ""
        self.stdout.write(f"audit chain intact: {count} events{before}")
