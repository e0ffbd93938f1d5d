"""The app's least-privilege database role (PostgreSQL): the statements that grant it what it
needs. Migrations run as the owner of the tables; the web processes, workers and beat connect as
this role (docs/security.md, "Database roles")."""

from refunds_admin.audit.models import AuditEvent

# Rows the app only ever inserts: the audit (also a hash chain) and the money booked. Their
# triggers refuse changes too; without UPDATE and DELETE the role cannot even try.
INSERT_ONLY = (AuditEvent._meta.db_table, "ledger_credit")


def grant_statements(connection, role):
    qn = connection.ops.quote_name
    r = qn(role)
    owner = qn(connection.settings_dict["USER"] or "postgres")
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
    # The owner takes over the partitions the app builds (ALTER ... OWNER needs membership).
    statements.append(f"GRANT {r} TO {owner}")
    return statements
