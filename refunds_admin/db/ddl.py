"""Migration steps for the fast paths (PostgreSQL only; SQLite relies on the services).

The tables written 100k rows at a time keep their foreign keys as statement-level triggers
instead of per-row constraints; docs/performance.md ("Foreign keys") lists which, and what checks
each one instead.
"""


def statement_level_foreign_key(child, column, parent):
    """SQL (create, drop) for a foreign key checked once per statement instead of once per row.

    Used for the tables written 100k rows at a time (entries, prize places, proposal lines,
    statement messages): a regular foreign key runs one check per row (docs/performance.md,
    "Foreign keys"), this runs one set-based check per COPY. Like a foreign key it takes KEY
    SHARE locks on the parent rows, refuses rows whose parent does not exist, and refuses
    deleting a parent that still has rows. PostgreSQL only; SQLite relies on the services.
    """
    name = f"{child}_{column}_exists"
    create = f"""
CREATE FUNCTION {name}() RETURNS trigger AS $$
DECLARE missing bigint;
BEGIN
    PERFORM 1 FROM {parent} WHERE id IN (SELECT DISTINCT {column} FROM new_rows) FOR KEY SHARE;
    SELECT n.{column} INTO missing FROM (SELECT DISTINCT {column} FROM new_rows) n
        LEFT JOIN {parent} p ON p.id = n.{column} WHERE p.id IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '{child}.{column} = % does not exist in {parent}', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER {name}_on_insert AFTER INSERT ON {child}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {name}();
CREATE TRIGGER {name}_on_update AFTER UPDATE ON {child}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {name}();

CREATE FUNCTION {parent}_keeps_{child}() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM old_rows o JOIN {child} c ON c.{column} = o.id) THEN
        RAISE EXCEPTION '{parent}: rows of {child} still refer to it'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER {parent}_keeps_{child} AFTER DELETE ON {parent}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {parent}_keeps_{child}();
"""
    drop = f"""
DROP TRIGGER IF EXISTS {name}_on_insert ON {child};
DROP TRIGGER IF EXISTS {name}_on_update ON {child};
DROP FUNCTION IF EXISTS {name}();
DROP TRIGGER IF EXISTS {parent}_keeps_{child} ON {parent};
DROP FUNCTION IF EXISTS {parent}_keeps_{child}();
"""
    return create, drop


def postgres_only(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run
