"""Audit events are append-only: on PostgreSQL the database itself refuses UPDATE and DELETE."""

from django.db import migrations

FORBID = """
CREATE OR REPLACE FUNCTION refunds_forbid_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_auditevent_append_only
    BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION refunds_forbid_change();
CREATE TRIGGER audit_auditevent_no_truncate
    BEFORE TRUNCATE ON audit_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION refunds_forbid_change();
"""

ALLOW = """
DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent;
DROP TRIGGER IF EXISTS audit_auditevent_no_truncate ON audit_auditevent;
"""


def forbid(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORBID, params=None)


def allow(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ALLOW, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]
    operations = [migrations.RunPython(forbid, allow)]
