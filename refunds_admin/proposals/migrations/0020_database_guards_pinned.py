"""Two guards of the app's database role's reach (docs/security.md, "Database roles"):

- Every function of ours (triggers, and refunds_attach_partition, which runs as the tables'
  owner) reads tables by name. PostgreSQL looks a name up in the session's temporary schema
  first unless `pg_temp` is named, last, in the function's own search_path: a session could
  otherwise create a temporary `proposals_payoutproposal` saying "draft" and have the line
  trigger, or the owner's function, believe a posted proposal's lines may change. Each function
  now pins `pg_catalog, public, pg_temp` (tests/services/test_least_privilege.py checks that
  every plpgsql function in the schema does).
- A proposal's status only moves forward along the workflow (proposals.services,
  ledger.posting): a decided proposal never goes back to draft, so its lines, which may change
  only while it is a draft, can never be rewritten by switching its status back and forth.
"""

from django.db import migrations

from refunds_admin.db import postgres_only

PIN = """
DO $$
DECLARE f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        JOIN pg_language l ON l.oid = p.prolang
        WHERE n.nspname = 'public' AND l.lanname = 'plpgsql'
          AND pg_has_role(current_user, p.proowner, 'MEMBER')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, public, pg_temp', f);
    END LOOP;
END $$;
"""

FORWARD = """
CREATE FUNCTION proposals_status_moves_forward() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    -- The workflow's moves, and no other: prepare again (superseded), submit, withdraw (back
    -- to draft, before any decision), approve, reject, post, fail, resume a failed posting.
    IF (OLD.status, NEW.status) IN (
        ('draft', 'submitted'), ('draft', 'superseded'),
        ('submitted', 'approved'), ('submitted', 'rejected'), ('submitted', 'draft'),
        ('submitted', 'superseded'),
        ('approved', 'posting'), ('approved', 'posted'), ('approved', 'failed'),
        ('posting', 'posted'), ('posting', 'failed'),
        ('failed', 'approved')
    ) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'proposal % is %: it cannot become % (a decided proposal never goes back)',
        OLD.id, OLD.status, NEW.status USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER proposals_status_moves_forward
    BEFORE UPDATE OF status ON proposals_payoutproposal
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION proposals_status_moves_forward();
"""

BACK = """
DROP TRIGGER IF EXISTS proposals_status_moves_forward ON proposals_payoutproposal;
DROP FUNCTION IF EXISTS proposals_status_moves_forward();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("proposals", "0019_who_applied_the_finding"),
        ("audit", "0007_tournament_any_case_index"),
        ("ledger", "0009_merge_0008_credit_methods_0008_job_waits_for"),
        ("notifications", "0002_copy_friendly_messages"),
        ("policies", "0002_presets_and_frozen_versions"),
        ("tournaments", "0015_api_client_any_reading_role"),
    ]
    operations = [
        migrations.RunPython(postgres_only(FORWARD), postgres_only(BACK)),
        # Last, so that it pins the function just created too; pinning stays when migrated back.
        migrations.RunPython(postgres_only(PIN), migrations.RunPython.noop),
    ]
