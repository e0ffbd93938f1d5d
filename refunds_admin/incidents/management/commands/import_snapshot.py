from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from refunds_admin.errors import Refused
from refunds_admin.incidents.services import import_snapshot
from refunds_admin.jobs import errors as dberrors
from refunds_admin.tournaments.models import Snapshot


class Command(BaseCommand):
    help = "Import a tournament-snapshot/1 JSON file (all or nothing; problems go to stderr)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="the snapshot JSON file, or - for standard input")
        parser.add_argument(
            "--user", help="import as this staff user (support or manager); default: the system"
        )

    def handle(self, *args, file, user=None, **options):
        import sys

        raw = sys.stdin.buffer.read() if file == "-" else _read(file)
        acting_user = None
        if user:
            acting_user = get_user_model().objects.filter(username=user).first()
            if acting_user is None:
                raise CommandError(f"no user named {user!r}")
        try:
            snapshot = import_snapshot(raw, acting_user=acting_user, source=Snapshot.Source.CLI)
        except PermissionDenied as e:
            raise CommandError(str(e)) from None
        except Refused as e:
            raise CommandError(str(e)) from None
        except DatabaseError as e:
            # One line naming the cause (a statement timeout, the database gone), not a
            # traceback: the import is one transaction, so nothing was saved.
            raise CommandError(
                f"the database stopped the import: {dberrors.describe(e)}; nothing was saved"
            ) from None
        t = snapshot.tournament
        self.stdout.write(
            f"Imported {t.external_id} ({t.name}) snapshot v{snapshot.version}: "
            f"{snapshot.entries_count:,} entries, {snapshot.active_count:,} active, "
            f"sha256 {snapshot.sha256}"
        )


def _read(file):
    try:
        return Path(file).read_bytes()
    except OSError as e:
        raise CommandError(f"cannot read {file}: {e.strerror}") from None
