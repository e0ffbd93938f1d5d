"""The approver's figures on the proposal; the breakdown's screen-name search becomes a
case-insensitive prefix search, served on PostgreSQL by an index on lower(screen_name)."""

from django.db import migrations, models

INDEX = "payoutline_screen_name_prefix"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON proposals_payoutline "
            "(proposal_id, lower(screen_name) text_pattern_ops)"
        )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("proposals", "0003_payoutline_capped_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="payoutproposal",
            name="figures",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="What the approver reads beside the total, computed when prepared (proposals/figures.py): pool reconciliation, distribution, top payouts, capped entries, changes since the previous version; amounts in cents.",
            ),
        ),
        migrations.RemoveIndex(model_name="payoutline", name="proposals_p_proposa_a521a9_idx"),
        migrations.RunPython(create_index, drop_index),
    ]
