"""Walk the audit's hash chain: exit 0 when every event is as written, 1 at the first break."""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from refunds_admin.audit import chain
from refunds_admin.audit.models import AuditEvent


def _head(value):
    """`--head ID:HASH`, as an earlier run printed it."""
    event_id, sep, digest = value.partition(":")
    if not sep or not event_id.strip().isdigit() or len(digest.strip()) != 64:
        raise CommandError(f"--head must be ID:HASH as verify_audit printed it, not {value!r}")
    return int(event_id), digest.strip().lower()


class Command(BaseCommand):
    help = (
        "Check the audit's hash chain; exits 1 naming the first event that breaks it. Prints the "
        "chain's head (ID:HASH): keep it, and give it as --head next time, so that events removed "
        "from the end of the chain (which leave no break behind them) are found too."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--head",
            type=_head,
            metavar="ID:HASH",
            help="the head an earlier run printed: it must still be in the chain, unchanged",
        )

    def handle(self, *args, head=None, **options):
        # In one transaction, so the server-side cursor goes with it when the walk stops early.
        with transaction.atomic():
            events = AuditEvent.objects.order_by("id").iterator(chunk_size=5000)
            count, unchained, broken = chain.verify(events)
            del events
            last = AuditEvent.objects.order_by("-id").values_list("id", "hash").first()
            recorded = (
                AuditEvent.objects.filter(pk=head[0]).values_list("hash", flat=True).first()
                if head
                else None
            )
        if broken is not None:
            event_id, what = broken
            raise CommandError(
                f"the audit chain is broken at event {event_id}: it {what} "
                f"({count - 1} events before it are intact)",
                returncode=1,
            )
        if head is not None:
            # The chain links every event to the one before it, so the recorded head still
            # there with its hash means nothing up to it was removed or changed; a missing one
            # means the newest events were removed (the chain then ends earlier, unbroken).
            if recorded is None:
                raise CommandError(
                    f"the audit chain no longer holds event {head[0]}, the head recorded "
                    f"earlier: events were removed from its end (it now ends at event "
                    f"{last[0] if last else 'none'})",
                    returncode=1,
                )
            if recorded != head[1]:
                raise CommandError(
                    f"event {head[0]}, the head recorded earlier, no longer has the hash "
                    f"recorded ({head[1][:12]}…, now {recorded[:12]}…): the chain was rewritten",
                    returncode=1,
                )
        before = f" ({unchained} written before the chain began)" if unchained else ""
        self.stdout.write(f"audit chain intact: {count} events{before}")
        if last is not None and last[1]:
            self.stdout.write(f"head (keep it; give it as --head next time): {last[0]}:{last[1]}")
