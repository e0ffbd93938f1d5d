"""The app's database role does not own the tables (docs/security.md, "Database roles"), so it
cannot attach or detach partitions itself: it builds a new partition as a bare table of its own
(COPY, indexes), then asks this function, which runs as the tables' owner (SECURITY DEFINER), to
take it over and attach it. The function attaches only where the workflow allows it: a
proposal's lines while the proposal is a draft (replacing the draft's old lines), a snapshot's
entries once. Nothing else can detach or replace a partition.
"""

from django.db import migrations

from refunds_admin.db import postgres_only

CREATE = """
CREATE FUNCTION refunds_attach_partition(parent text, part text, key bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    old text;
    st text;
BEGIN
    IF parent = 'proposals_payoutline' THEN
        SELECT status INTO st FROM proposals_payoutproposal WHERE id = key FOR UPDATE;
        IF st IS DISTINCT FROM 'draft' THEN
            RAISE EXCEPTION 'proposal % is %: its lines are replaced only while it is a draft',
                key, coalesce(st, 'missing') USING ERRCODE = 'insufficient_privilege';
        END IF;
    ELSIF parent = 'tournaments_entry' THEN
        NULL;  -- a snapshot's entries are written once: refused below if already attached
    ELSE
        RAISE EXCEPTION '% is not a table the app partitions', parent
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relname = part AND c.relkind = 'r'
          AND NOT c.relispartition
          AND pg_has_role(session_user, c.relowner, 'USAGE')
    ) THEN
        RAISE EXCEPTION '% is not a new table of this session''s role', part
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    FOR old IN
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = parent::regclass
          AND pg_get_expr(c.relpartbound, c.oid) = format('FOR VALUES IN (''%s'')', key)
    LOOP
        IF parent = 'tournaments_entry' THEN
            RAISE EXCEPTION 'snapshot % already has its entries', key
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        EXECUTE format('DROP TABLE %I', old);
    END LOOP;
    -- The owner's from now on: the app's role can no longer alter, truncate or detach it.
    EXECUTE format('ALTER TABLE %I OWNER TO %I', part, current_user);
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES IN (%s)', parent, part, key);
END;
$$;
REVOKE ALL ON FUNCTION refunds_attach_partition(text, text, bigint) FROM PUBLIC;
"""

DROP = "DROP FUNCTION IF EXISTS refunds_attach_partition(text, text, bigint);"


class Migration(migrations.Migration):
    dependencies = [
        ("proposals", "0010_who_chose_the_rule"),
        ("tournaments", "0007_snapshot_document_zlib"),
    ]
    operations = [migrations.RunPython(postgres_only(CREATE), postgres_only(DROP))]
