"""Every tournament names the cancellation policy version that applies; those imported before
policies existed were computed under the default policy, version 1."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def default_version_one(apps, schema_editor):
    Tournament = apps.get_model("tournaments", "Tournament")
    PolicyVersion = apps.get_model("policies", "PolicyVersion")
    DefaultPolicy = apps.get_model("policies", "DefaultPolicy")
    if not Tournament.objects.exists():
        return
    default = DefaultPolicy.objects.get(pk=1)
    version = PolicyVersion.objects.get(policy_id=default.policy_id, version=1)
    Tournament.objects.filter(policy_version__isnull=True).update(policy_version=version)


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("policies", "0002_presets_and_frozen_versions"),
        ("tournaments", "0007_snapshot_document_zlib"),
    ]

    operations = [
        migrations.AddField(
            model_name="tournament",
            name="policy_version",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="tournaments",
                to="policies.policyversion",
            ),
        ),
        migrations.AddField(
            model_name="tournament",
            name="policy_changed_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="tournament",
            name="policy_changed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(default_version_one, migrations.RunPython.noop),
    ]
