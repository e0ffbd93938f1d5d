"""A proposal's lines are immutable once it is submitted: on PostgreSQL the database refuses
INSERT, UPDATE and DELETE of lines whose proposal is not a draft, and TRUNCATE of the table.

Statement-level triggers with transition tables: one check per COPY of 100k lines, not one per
line. Preparing again replaces a submitted proposal's lines only after setting it back to draft
(proposals.services.prepare_proposal), in the same transaction.
"""

from django.db import migrations

from refunds_admin.db.ddl import postgres_only

FORBID = """
CREATE FUNCTION proposals_payoutline_frozen() RETURNS trigger AS $$
DECLARE pid bigint; st text;
BEGIN
    SELECT p.id, p.status INTO pid, st FROM proposals_payoutproposal p
        WHERE p.id IN (SELECT DISTINCT proposal_id FROM changed_rows) AND p.status <> 'draft'
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'proposal % is %: its lines are immutable once submitted (% refused)',
            pid, st, TG_OP USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER proposals_payoutline_frozen_insert AFTER INSERT ON proposals_payoutline
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION proposals_payoutline_frozen();
CREATE TRIGGER proposals_payoutline_frozen_update AFTER UPDATE ON proposals_payoutline
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION proposals_payoutline_frozen();
CREATE TRIGGER proposals_payoutline_frozen_delete AFTER DELETE ON proposals_payoutline
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION proposals_payoutline_frozen();
CREATE TRIGGER proposals_payoutline_no_truncate BEFORE TRUNCATE ON proposals_payoutline
    FOR EACH STATEMENT EXECUTE FUNCTION refunds_forbid_change();
"""

ALLOW = """
DROP TRIGGER IF EXISTS proposals_payoutline_frozen_insert ON proposals_payoutline;
DROP TRIGGER IF EXISTS proposals_payoutline_frozen_update ON proposals_payoutline;
DROP TRIGGER IF EXISTS proposals_payoutline_frozen_delete ON proposals_payoutline;
DROP TRIGGER IF EXISTS proposals_payoutline_no_truncate ON proposals_payoutline;
DROP FUNCTION IF EXISTS proposals_payoutline_frozen();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("proposals", "0006_posting_order_wallet"),
        ("audit", "0002_append_only"),
    ]
    operations = [migrations.RunPython(postgres_only(FORBID), postgres_only(ALLOW))]
