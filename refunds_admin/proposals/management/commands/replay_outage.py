from django.core.management.base import BaseCommand, CommandError

from refunds_admin.audit.models import AuditEvent
from refunds_admin.outages.models import Outage
from refunds_admin.proposals.batches import outage_fingerprint
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.proposals.services import replay_proposal


class Command(BaseCommand):
    help = (
        "Recompute every proposal of an outage from its stored snapshot and check its "
        "fingerprint and lines, and every batch approval's outage fingerprint "
        "(exit status 1 on any mismatch)."
    )

    def add_arguments(self, parser):
        parser.add_argument("outage_id", type=int)

    def handle(self, *args, outage_id, **options):
        outage = Outage.objects.filter(pk=outage_id).first()
        if outage is None:
            raise CommandError(f"no outage {outage_id}")
        proposals = (
            PayoutProposal.objects.filter(incident__outage_membership__outage=outage)
            .select_related("snapshot", "incident__tournament")
            .order_by("incident__tournament__external_id", "version")
        )
        checked, mismatched = 0, []
        for proposal in proposals.iterator(chunk_size=100):
            result = replay_proposal(proposal)
            checked += 1
            name = (
                f"{proposal.incident.tournament.external_id} proposal {proposal.pk} "
                f"v{proposal.version}"
            )
            if result.matches:
                self.stdout.write(f"OK       {name} ({proposal.lines_count:,} lines)")
                continue
            mismatched.append(name)
            self.stdout.write(f"MISMATCH {name}")
            for difference in result.differences:
                self.stderr.write(f"  - {difference}")
        mismatched += self._check_batch_approvals(outage)
        if not checked:
            self.stdout.write(f"Outage {outage.pk} has no proposal yet: nothing to replay.")
            return
        if mismatched:
            raise CommandError(
                f"{len(mismatched)} of {checked} proposals of outage {outage.pk} do NOT match "
                f"their stored snapshots: {', '.join(mismatched)}"
            )
        self.stdout.write(f"OK: all {checked} proposals of outage {outage.pk} recompute exactly.")

    def _check_batch_approvals(self, outage):
        """Each batch approval quoted an outage fingerprint: the approved fingerprints of the
        proposals it names must still hash to it."""
        mismatched = []
        approvals = AuditEvent.objects.filter(
            action="outage.batch_approved", object_type="outage", object_id=str(outage.pk)
        ).order_by("created_at", "id")
        for event in approvals:
            after = event.after if isinstance(event.after, dict) else {}
            ids = after.get("proposals") or []
            approved = dict(
                PayoutProposal.objects.filter(pk__in=ids).values_list("pk", "approved_fingerprint")
            )
            recomputed = outage_fingerprint(approved.get(pk, "") for pk in ids)
            name = f"batch approval of {len(ids)} proposals by {event.actor_name}"
            if recomputed == after.get("fingerprint"):
                self.stdout.write(f"OK       {name}: outage fingerprint {recomputed[:12]}…")
            else:
                self.stdout.write(
                    f"MISMATCH {name}: the approved fingerprints no longer hash to it"
                )
                mismatched.append(name)
        return mismatched
