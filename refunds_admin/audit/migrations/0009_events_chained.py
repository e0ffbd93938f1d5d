"""Every audit event written from now on is chained (PostgreSQL).

`verify_audit` counts events without a hash as written before the chain began, and lets them
come only first; an INSERT was free to choose its id and leave the hash out, so the app's
database role could slip an event naming any actor in before the first one and the chain still
verified. The database now refuses an event without a hash. One with a hash anywhere but at the
end breaks the chain there, and one at the end needs the chain's key (audit/chain.py).

(Refusing ids before the last one as well would let whoever inserts one id far ahead stop every
later append: the app's ids come from the sequence.)
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION audit_events_chained() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NEW.hash IS NULL OR NEW.hash = '' THEN
        RAISE EXCEPTION 'audit event % refused: every event carries its hash in the chain',
            NEW.id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER audit_events_chained
    BEFORE INSERT ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_events_chained();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS audit_events_chained ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_events_chained();
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0008_chain_keyed")]
    operations = [migrations.RunPython(forward, backward)]
