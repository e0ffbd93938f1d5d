"""Print the current two-factor code of a user's authenticator (demo and development).

Whoever can run manage.py on the server can read the keys from the database anyway; the command
still refuses when DEBUG is off unless --yes-i-am-the-operator is given, so that it is not used
as a habit in production.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from refunds_admin.accounts import mfa


class Command(BaseCommand):
    help = "Print the current TOTP code of USER's confirmed authenticator (demo/development)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--yes-i-am-the-operator", action="store_true")

    def handle(self, *args, username, yes_i_am_the_operator, **options):
        if not settings.DEBUG and not yes_i_am_the_operator:
            raise CommandError("DEBUG is off: this prints a second factor; see --help.")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        device = mfa.confirmed_device(user)
        if device is None:
            raise CommandError(f"{username} has no confirmed authenticator (enrol first).")
        self.stdout.write(mfa.code_for(device))
