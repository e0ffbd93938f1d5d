"""The four presets as approved version 1 of each policy, the seed's as the default; and an
approved version never changes or disappears: on PostgreSQL the database refuses UPDATE of its
document, hash, number, title or status, and DELETE (a proposal's record names the version)."""

from django.db import migrations
from django.utils import timezone

from refunds_admin.db import postgres_only

FORBID = """
CREATE FUNCTION policies_version_frozen() RETURNS trigger AS $$
BEGIN
    IF OLD.status = 'approved' AND (TG_OP = 'DELETE' OR
        (NEW.policy_id, NEW.version, NEW.document, NEW.sha256, NEW.title, NEW.status)
        IS DISTINCT FROM
        (OLD.policy_id, OLD.version, OLD.document, OLD.sha256, OLD.title, OLD.status)) THEN
        RAISE EXCEPTION 'policy version % v% is approved: it never changes (% refused)',
            OLD.policy_id, OLD.version, TG_OP USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER policies_policyversion_frozen BEFORE UPDATE OR DELETE ON policies_policyversion
    FOR EACH ROW EXECUTE FUNCTION policies_version_frozen();
CREATE TRIGGER policies_policyversion_no_truncate BEFORE TRUNCATE ON policies_policyversion
    FOR EACH STATEMENT EXECUTE FUNCTION refunds_forbid_change();
"""

ALLOW = """
DROP TRIGGER IF EXISTS policies_policyversion_frozen ON policies_policyversion;
DROP TRIGGER IF EXISTS policies_policyversion_no_truncate ON policies_policyversion;
DROP FUNCTION IF EXISTS policies_version_frozen();
"""


def load_presets(apps, schema_editor):
    from refunds_admin.payouts.policy import DEFAULT_POLICY_ID, PRESETS

    Policy = apps.get_model("policies", "Policy")
    PolicyVersion = apps.get_model("policies", "PolicyVersion")
    DefaultPolicy = apps.get_model("policies", "DefaultPolicy")
    now = timezone.now()
    for preset in PRESETS.values():
        policy, _ = Policy.objects.get_or_create(id=preset.id)
        PolicyVersion.objects.get_or_create(
            policy=policy,
            version=preset.version,
            defaults={
                "document": preset.canonical_json().decode("utf-8"),
                "sha256": preset.sha256,
                "title": preset.title,
                "status": "approved",
                "proposed_at": now,
                "approved_at": now,
            },
        )
    DefaultPolicy.objects.get_or_create(id=1, defaults={"policy_id": DEFAULT_POLICY_ID})


class Migration(migrations.Migration):
    dependencies = [("policies", "0001_policies_and_versions"), ("audit", "0002_append_only")]
    operations = [
        migrations.RunPython(load_presets, migrations.RunPython.noop),
        migrations.RunPython(postgres_only(FORBID), postgres_only(ALLOW)),
    ]
