import sys

from django.core.management.base import BaseCommand

from refunds_admin.payouts import cli


class Command(BaseCommand):
    help = (
        "Compute the payout proposal for a tournament-snapshot/1 file (FILE, or - for stdin), "
        "under the snapshot's policy or a cancellation-policy/1 file given with --policy. "
        "Prints payout-proposal/1 JSON; a refused snapshot exits 1 with the reasons on stderr."
    )
    requires_system_checks = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        cli.build_parser(parser)

    def handle(self, *args, file, explain=None, policy=None, **options):
        # manage.py normally runs the engine's CLI directly, without Django (see manage.py);
        # this class keeps the command listed in `manage.py help` and usable via call_command.
        code = cli.run(
            file,
            explain,
            stdin=sys.stdin,
            stdout=self.stdout,
            stderr=self.stderr,
            fingerprint=bool(options.get("fingerprint")),
            policy_file=policy,
        )
        if code:
            sys.exit(code)
