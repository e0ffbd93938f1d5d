"""Print the current two-factor code of a user's authenticator (demo and development).

Refused when DEBUG is off: in production a second factor is what the person's phone shows, never
what a shell prints.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from refunds_admin.accounts import mfa


class Command(BaseCommand):
    help = "Print the current TOTP code of USER's confirmed authenticator (demo/development)."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        if not settings.DEBUG:
            raise CommandError("DEBUG is off: this prints a second factor (demo only).")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        device = mfa.confirmed_device(user)
        if device is None:
            raise CommandError(f"{username} has no confirmed authenticator (enrol first).")
        self.stdout.write(mfa.code_for(device))
