"""Fewer, narrower indexes on proposal lines (models.LINE_PARTITION_INDEXES, docs/performance.md).

- The sort indexes (chips, total) and the capped one become each partition's own, without
  proposal_id in front: narrower, and built a third quicker after each prepare's COPY.
- The search indexes (player_id, lower(screen_name)) go: the breakdown's search runs on the
  snapshot's entries, whose lines they are position for position (web/queries.proposal_lines).

PostgreSQL: the parent's indexes are dropped, which drops their copies on every partition, and
each existing proposal's partition gets the new ones. SQLite has no partitions: its table keeps
its indexes, which serve it as before; only Django's record of them goes.
"""

from django.db import migrations

DROPPED = (
    "proposals_p_proposa_11cd10_idx",  # (proposal_id, player_id)
    "proposals_p_proposa_ae0fe0_idx",  # (proposal_id, chips, position)
    "proposals_p_proposa_cde48e_idx",  # (proposal_id, total_cents, position)
    "payoutline_capped_position",  # (proposal_id, position) WHERE capped
    "payoutline_screen_name_prefix",  # (proposal_id, lower(screen_name) text_pattern_ops)
)
# As models.LINE_PARTITION_INDEXES on the day of this migration.
PARTITION_INDEXES = (
    "(chips, position)",
    "(total_cents, position)",
    "(position) WHERE capped",
)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in DROPPED:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'proposals_payoutline'::regclass "
            "AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT' ORDER BY c.relname"
        )
        partitions = [name for (name,) in cursor.fetchall()]
    for part in partitions:
        for n, spec in enumerate(PARTITION_INDEXES):
            schema_editor.execute(f'CREATE INDEX IF NOT EXISTS "{part}_local{n}" ON "{part}" {spec}')


class Migration(migrations.Migration):
    dependencies = [
        ("proposals", "0008_outage_prepare_runs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(forward, migrations.RunPython.noop, elidable=False)
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="payoutline", name=name)
                for name in DROPPED[:4]
            ],
        ),
    ]
