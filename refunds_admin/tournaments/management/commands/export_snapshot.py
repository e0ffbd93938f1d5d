from django.core.management.base import BaseCommand, CommandError

from refunds_admin.errors import Refused
from refunds_admin.tournaments.models import Tournament
from refunds_admin.tournaments.services import export_snapshot


class Command(BaseCommand):
    help = "Print a tournament's current snapshot exactly as it was imported."

    def add_arguments(self, parser):
        parser.add_argument("external_id")
        parser.add_argument("--output", "-o", help="write to this file instead of stdout")

    def handle(self, *args, external_id, output=None, **options):
        tournament = Tournament.objects.filter(external_id=external_id).first()
        if tournament is None:
            raise CommandError(f"no tournament {external_id!r}")
        try:
            text = export_snapshot(tournament)
        except Refused as e:
            raise CommandError(str(e)) from None
        if output:
            with open(output, "wb") as f:
                f.write(text.encode("utf-8"))
        else:
            self.stdout.write(text, ending="")
