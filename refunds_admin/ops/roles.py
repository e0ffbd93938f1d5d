"""The app's least-privilege database role (PostgreSQL): the statements that grant it what it
needs. Migrations run as the owner of the tables; the web processes, workers and beat connect as
this role (docs/security.md, "Database roles")."""

from django.db import DatabaseError, transaction

from refunds_admin.audit.models import AuditEvent

# Rows the app only ever inserts: the audit (also a hash chain) and the money booked. Their
# triggers refuse changes too; without UPDATE and DELETE the role cannot even try.
INSERT_ONLY = (AuditEvent._meta.db_table, "ledger_credit")


def grant_statements(connection, role):
    qn = connection.ops.quote_name
    r = qn(role)
    statements = [
        f"GRANT USAGE, CREATE ON SCHEMA public TO {r}",  # CREATE: a new partition's bare table
        f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {r}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {r}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {r}",
        *(f"REVOKE UPDATE, DELETE ON {qn(t)} FROM {r}" for t in INSERT_ONLY),
        f"GRANT EXECUTE ON FUNCTION refunds_attach_partition(text, text, bigint) TO {r}",
        # Tables the owner creates later (the next migrations) are the role's to use as well.
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE "
        f"ON TABLES TO {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {r}",
    ]
    return statements


def owner_may_take_over(connection, role):
    """The owner takes over the partitions the app builds (ALTER TABLE ... OWNER TO needs the
    owner to be a member of the app's role): True when it is, or could make itself one."""
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_has_role(current_user, %s, 'USAGE')", [role])
        if cursor.fetchone()[0]:
            return True
        try:
            with transaction.atomic(using=connection.alias):
                cursor.execute(f"GRANT {qn(role)} TO CURRENT_USER")
        except DatabaseError:
            return False
        return True
