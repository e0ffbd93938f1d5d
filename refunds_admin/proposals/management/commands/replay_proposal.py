from django.core.management.base import BaseCommand, CommandError

from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.proposals.services import replay_proposal


class Command(BaseCommand):
    help = (
        "Recompute a proposal from its stored snapshot and check its fingerprint "
        "(exit status 1 when it no longer matches)."
    )

    def add_arguments(self, parser):
        parser.add_argument("proposal_id", type=int)

    def handle(self, *args, proposal_id, **options):
        proposal = PayoutProposal.objects.select_related("snapshot").filter(pk=proposal_id).first()
        if proposal is None:
            raise CommandError(f"no proposal {proposal_id}")
        result = replay_proposal(proposal)
        self.stdout.write(f"stored fingerprint:     {result.stored_fingerprint}")
        self.stdout.write(f"recomputed fingerprint: {result.recomputed_fingerprint}")
        if result.matches:
            self.stdout.write(
                f"OK: proposal {proposal.pk} recomputes exactly from snapshot "
                f"v{proposal.snapshot.version} ({proposal.lines_count:,} lines) under the stored "
                f"policy version, {proposal.policy_id} v{proposal.policy_version_number} "
                f"({proposal.policy_sha256[:12]}…), whatever the tournament runs under today."
            )
            return
        for difference in result.differences:
            self.stderr.write(f"- {difference}")
        raise CommandError(f"proposal {proposal.pk} does NOT match its stored snapshot")
