"""A proposal records the policy version it was computed under; those prepared before policies
existed were computed under the default policy, version 1."""

import django.db.models.deletion
from django.db import migrations, models


def default_version_one(apps, schema_editor):
    PayoutProposal = apps.get_model("proposals", "PayoutProposal")
    PolicyVersion = apps.get_model("policies", "PolicyVersion")
    DefaultPolicy = apps.get_model("policies", "DefaultPolicy")
    if not PayoutProposal.objects.exists():
        return
    default = DefaultPolicy.objects.get(pk=1)
    version = PolicyVersion.objects.get(policy_id=default.policy_id, version=1)
    PayoutProposal.objects.filter(policy_version__isnull=True).update(
        policy_version=version,
        policy_id=version.policy_id,
        policy_version_number=version.version,
        policy_sha256=version.sha256,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("policies", "0002_presets_and_frozen_versions"),
        ("proposals", "0009_line_indexes_per_partition"),
    ]

    operations = [
        migrations.AddField(
            model_name="payoutproposal",
            name="policy_version",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="proposals",
                to="policies.policyversion",
            ),
        ),
        migrations.AddField(
            model_name="payoutproposal",
            name="policy_id",
            field=models.CharField(default="", max_length=63),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="payoutproposal",
            name="policy_version_number",
            field=models.PositiveIntegerField(default=1),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="payoutproposal",
            name="policy_sha256",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(default_version_one, migrations.RunPython.noop),
    ]
