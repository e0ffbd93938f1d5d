"""Demo data for `make run`: users of every role, a few tournaments, one open incident and one
cancelled incident with a prepared draft proposal. Idempotent: running it again changes nothing
but the demo users' passwords, which are reset to the printed ones."""

import json
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from refunds_admin.accounts import mfa
from refunds_admin.incidents import services as incidents
from refunds_admin.incidents.models import Incident
from refunds_admin.proposals import services as proposals
from refunds_admin.tournaments.models import Snapshot, Tournament

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"

# username, role (None: superuser), password: printed by the command, demo only.
USERS = [
    ("admin", None, "admin-demo-pass"),
    ("support", "support", "support-demo-pass"),
    ("manager", "manager", "manager-demo-pass"),
    ("manager2", "manager", "manager2-demo-pass"),
    ("auditor", "auditor", "auditor-demo-pass"),
]

# file, how long ago play started, and what happened (timings keep the example's own
# elapsed time so that the example's rule applies).
TOURNAMENTS = [
    ("06-non-cash-prize.json", timedelta(hours=1), None),
    ("03-early-failure-full-refund.json", timedelta(minutes=50), None),
    # Failed 10 minutes ago: the 30-minute countdown is running.
    (
        "02-not-in-the-money.json",
        timedelta(hours=2, minutes=15),
        ("open", timedelta(hours=2, minutes=5)),
    ),
    # Failed 49 minutes ago, never resumed: cancelled, proposal prepared, waiting to be submitted.
    (
        "01-in-the-money.json",
        timedelta(hours=6, minutes=30),
        ("cancelled", timedelta(hours=5, minutes=41)),
    ),
]


class Command(BaseCommand):
    help = "Create demo users and tournaments (idempotent) and print the demo logins."

    def handle(self, *args, **options):
        if not settings.DEBUG:
            # Demo users with printed passwords (a superuser among them) have no place in
            # production.
            raise CommandError("DEBUG is off: load_demo creates demo users (development only).")
        users = self._users()
        now = timezone.now()
        for filename, started_ago, incident in TOURNAMENTS:
            doc = json.loads((DEMO_DIR / filename).read_text(encoding="utf-8"))
            external_id = doc["tournament"]["external_id"]
            if Tournament.objects.filter(external_id=external_id).exists():
                self.stdout.write(f"  {external_id}: already there")
                continue
            starts_at = (now - started_ago).replace(microsecond=0)
            doc["tournament"]["starts_at"] = starts_at.strftime("%Y-%m-%dT%H:%M:%SZ")
            with transaction.atomic():
                snapshot = incidents.import_snapshot(
                    json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                    acting_user=users["support"],
                    source=Snapshot.Source.DEMO,
                )
                summary = f"imported ({snapshot.entries_count:,} entries)"
                if incident:
                    summary += self._incident(snapshot.tournament, starts_at, *incident, users)
            self.stdout.write(f"  {external_id}: {summary}")
        self.stdout.write("")
        self.stdout.write("Demo logins (username / password):")
        for username, role, password in USERS:
            self.stdout.write(f"  {username} / {password}    ({role or 'superuser, Django admin'})")
        self.stdout.write("")
        self.stdout.write(
            "Two-factor codes (managers approve with one, the admin asks for one): add the key "
            "to an authenticator app, or print the current code with `DEBUG=1 .venv/bin/python manage.py totp_code USER`."
        )
        for username, key in self._two_factor(users):
            self.stdout.write(
                f"  {username}: key {key}    (DEBUG=1 .venv/bin/python manage.py totp_code {username})"
            )

    def _two_factor(self, users):
        """Managers and the superuser get a confirmed authenticator (confirmed with a real code
        computed from its key, as the enrolment page would); an existing one is kept."""
        for username, _role, _ in USERS:
            user = users[username]
            if not mfa.needs_device(user):
                continue
            device = mfa.confirmed_device(user)
            if device is None:
                device = mfa.start_enrolment(user)
                device = mfa.confirm_device(device, mfa.code_for(device), acting_user=None)
            yield username, mfa.secret(device)

    def _users(self):
        model = get_user_model()
        users = {}
        for username, role, password in USERS:
            user, _ = model.objects.get_or_create(username=username)
            user.set_password(password)
            # Staff e-mails (submitted, approved, overdue...) print on the console backend.
            user.email = user.email or f"{username}@example.test"
            user.is_superuser = user.is_staff = role is None
            user.save()
            if role:
                user.groups.add(Group.objects.get_or_create(name=role)[0])
            users[username] = user
        return users

    def _incident(self, tournament, starts_at, state, failed_after, users):
        incident = incidents.record_incident(
            tournament,
            failed_at=starts_at + failed_after,
            cause=Incident.Cause.SERVER_CRASH,
            description="Game server crashed; tables frozen (demo).",
            acting_user=users["support"],
        )
        incidents.log_restart_attempt(
            incident,
            attempted_at=starts_at + failed_after + timedelta(minutes=5),
            succeeded=False,
            note="Restarted the game server; tables did not come back (demo).",
            acting_user=users["support"],
        )
        if state == "open":
            return ", incident open (30-minute window running)"
        incidents.cancel_after_window(incident, acting_user=None)
        proposal = proposals.prepare_proposal(incident, acting_user=users["support"])
        return f", incident cancelled, draft proposal {proposal.pk} prepared"
