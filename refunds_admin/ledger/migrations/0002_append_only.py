"""Credits are append-only: on PostgreSQL the database itself refuses UPDATE and DELETE.

A proposal that has credits cannot be deleted either (the trigger stands in for the foreign key,
see Credit.proposal).

Reuses refunds_forbid_change() from audit 0002. Also drops the LIKE (pattern_ops) index Django
adds beside a varchar primary key: nobody searches credit keys by pattern, and every index
slows the posting of 100k credits.
"""

from django.db import migrations

FORBID = """
CREATE FUNCTION ledger_keep_proposals_with_credits() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM ledger_credit WHERE proposal_id = OLD.id) THEN
        RAISE EXCEPTION 'proposal % has credits in the ledger: it cannot be deleted', OLD.id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN OLD;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER ledger_keep_proposals_with_credits
    BEFORE DELETE ON proposals_payoutproposal
    FOR EACH ROW EXECUTE FUNCTION ledger_keep_proposals_with_credits();
CREATE TRIGGER ledger_credit_append_only
    BEFORE UPDATE OR DELETE ON ledger_credit
    FOR EACH ROW EXECUTE FUNCTION refunds_forbid_change();
DO $$
DECLARE name text;
BEGIN
    FOR name IN SELECT indexname FROM pg_indexes
                WHERE tablename = 'ledger_credit' AND indexdef LIKE '%varchar_pattern_ops%'
    LOOP
        EXECUTE format('DROP INDEX %I', name);
    END LOOP;
END $$;
"""

ALLOW = """
DROP TRIGGER IF EXISTS ledger_credit_append_only ON ledger_credit;
DROP TRIGGER IF EXISTS ledger_keep_proposals_with_credits ON proposals_payoutproposal;
DROP FUNCTION IF EXISTS ledger_keep_proposals_with_credits();
"""


def forbid(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORBID, params=None)


def allow(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ALLOW, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0001_initial"),
        ("audit", "0002_append_only"),
        ("proposals", "0001_initial"),
    ]
    operations = [migrations.RunPython(forbid, allow)]
