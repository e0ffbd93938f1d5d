from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError

from refunds_admin.errors import Refused
from refunds_admin.tournaments.services import create_api_client


class Command(BaseCommand):
    help = "Create a client of POST /api/snapshots and print its token (shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("name", help="e.g. the game platform's name")
        parser.add_argument(
            "--user",
            required=True,
            help="the client acts as this user: support or manager to import and record, any "
            "role (an auditor too) to read",
        )

    def handle(self, *args, name, user, **options):
        acting = get_user_model().objects.filter(username=user).first()
        if acting is None:
            raise CommandError(f"no user named {user!r}")
        try:
            client, token = create_api_client(name, user=acting)
        except (PermissionDenied, Refused) as e:
            raise CommandError(str(e)) from None
        self.stdout.write(f"API client {client.name} acts as {acting.username}.")
        self.stdout.write("Token (shown only now; only its SHA-256 is stored):")
        self.stdout.write(token)
