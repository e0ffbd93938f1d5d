"""Give the app's database role what it needs, and nothing more (PostgreSQL; docs/security.md).

Run by the tables' owner after `migrate` (`make serve` does both when MIGRATE_DATABASE_URL is
set): `DATABASE_URL=$MIGRATE_DATABASE_URL manage.py grant_app_role ROLE`. The app's role then
reads and writes rows, and inserts (only inserts) audit events and credits; it owns no table, so it cannot
ALTER a table, DISABLE TRIGGER, TRUNCATE or attach and detach partitions (the owner's
`refunds_attach_partition` does that where the workflow allows it, proposals migration 0011).
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import connections, transaction

from refunds_admin.ops.roles import grant_statements, owner_may_take_over


class Command(BaseCommand):
    help = "Grant the app's (least-privilege) database role its rights; run as the owner."

    def add_arguments(self, parser):
        parser.add_argument("role", help="the role the app connects as (DATABASE_URL's user)")
        parser.add_argument("--database", default="default", help="connection of the owner")

    def handle(self, *args, role, database, **options):
        connection = connections[database]
        if connection.vendor != "postgresql":
            raise CommandError("grant_app_role is for PostgreSQL (SQLite has no roles)")
        with transaction.atomic(using=database), connection.cursor() as cursor:
            for sql in grant_statements(connection, role):
                cursor.execute(sql)
        if not owner_may_take_over(connection, role):
            raise CommandError(
                f"the owner must be a member of {role} to take over the partitions it builds: "
                f"as a PostgreSQL superuser, GRANT {role} TO {connection.settings_dict['USER']}"
            )
        self.stdout.write(f"granted the app's rights to {role}")
