"""Credit keys for every id, and append-only everywhere money is recorded (PostgreSQL).

- ledger_key_part(text): the percent-encoding of db.keys.key_part() in SQL (UTF-8, RFC
  3986 unreserved characters left as they are, upper-case hex), so the one-statement chunk
  writer builds the very keys Python builds. Plain ids (the common case) skip the encoding.
- TRUNCATE is refused on credits (UPDATE and DELETE already are, migration 0002).
- Cashier deliveries only move forward: an applied delivery never changes, none is deleted,
  the table is never truncated.
"""

from django.db import migrations

from refunds_admin.db.ddl import postgres_only
from refunds_admin.db.keys import KEY_PART_FUNCTION

# The key function is written once, beside its Python twin (refunds_admin/db/keys.py).
FORBID = KEY_PART_FUNCTION + r"""
CREATE TRIGGER ledger_credit_no_truncate BEFORE TRUNCATE ON ledger_credit
    FOR EACH STATEMENT EXECUTE FUNCTION refunds_forbid_change();

CREATE FUNCTION ledger_delivery_forward_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'ledger_cashierdelivery is append-only: DELETE of % refused',
            OLD.credit_id USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.state = 'applied' OR NEW.credit_id <> OLD.credit_id THEN
        RAISE EXCEPTION 'ledger_cashierdelivery: % was applied by the cashier and never changes',
            OLD.credit_id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER ledger_delivery_forward_only BEFORE UPDATE OR DELETE ON ledger_cashierdelivery
    FOR EACH ROW EXECUTE FUNCTION ledger_delivery_forward_only();
CREATE TRIGGER ledger_delivery_no_truncate BEFORE TRUNCATE ON ledger_cashierdelivery
    FOR EACH STATEMENT EXECUTE FUNCTION refunds_forbid_change();
"""

ALLOW = """
DROP TRIGGER IF EXISTS ledger_delivery_no_truncate ON ledger_cashierdelivery;
DROP TRIGGER IF EXISTS ledger_delivery_forward_only ON ledger_cashierdelivery;
DROP FUNCTION IF EXISTS ledger_delivery_forward_only();
DROP TRIGGER IF EXISTS ledger_credit_no_truncate ON ledger_credit;
DROP FUNCTION IF EXISTS ledger_key_part(text);
"""


class Migration(migrations.Migration):
    dependencies = [("ledger", "0004_job_wallet_and_outage")]
    operations = [migrations.RunPython(postgres_only(FORBID), postgres_only(ALLOW))]
