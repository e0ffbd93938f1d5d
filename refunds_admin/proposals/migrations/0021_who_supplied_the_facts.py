"""Four eyes over the facts: who imported the snapshot a proposal was computed from, and who
recorded the incident's failure time, may not approve it (PayoutProposal.FACT_SUPPLIERS).

Proposals still waiting for a decision (draft or submitted) get both from their snapshot and
incident; decided ones are left as they were approved.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _undecided_from_their_facts(apps, schema_editor):
    PayoutProposal = apps.get_model("proposals", "PayoutProposal")
    undecided = PayoutProposal.objects.filter(status__in=["draft", "submitted"])
    for proposal in undecided.select_related("snapshot", "incident"):
        PayoutProposal.objects.filter(pk=proposal.pk).update(
            snapshot_imported_by_id=proposal.snapshot.imported_by_id,
            failure_recorded_by_id=proposal.incident.recorded_by_id,
        )


class Migration(migrations.Migration):

    dependencies = [
        ('incidents', '0002_who_applied_the_finding'),
        ('policies', '0002_presets_and_frozen_versions'),
        ('proposals', '0020_database_guards_pinned'),
        ('tournaments', '0017_current_snapshots_starts_at'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='payoutproposal',
            name='failure_recorded_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='payoutproposal',
            name='snapshot_imported_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddConstraint(
            model_name='payoutproposal',
            constraint=models.CheckConstraint(condition=models.Q(('approved_by__isnull', True), ('snapshot_imported_by__isnull', True), models.Q(('approved_by', models.F('snapshot_imported_by')), _negated=True), _connector='OR'), name='approver_is_not_snapshot_imported'),
        ),
        migrations.AddConstraint(
            model_name='payoutproposal',
            constraint=models.CheckConstraint(condition=models.Q(('approved_by__isnull', True), ('failure_recorded_by__isnull', True), models.Q(('approved_by', models.F('failure_recorded_by')), _negated=True), _connector='OR'), name='approver_is_not_failure_recorded'),
        ),
        # Last: the updates' deferred foreign-key checks would keep the constraints above from
        # being added in the same transaction.
        migrations.RunPython(_undecided_from_their_facts, migrations.RunPython.noop),
    ]
