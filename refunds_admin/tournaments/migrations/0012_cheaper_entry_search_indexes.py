"""The entries' player-id and screen-name search indexes, at half their cost to each import
(docs/performance.md, "Issue 25: the entries' search indexes in the C collation").

The database's collation is C.UTF-8, which PostgreSQL 15 does not treat as C: every comparison
of `lower(player_id)` went through strcoll, without abbreviated keys, and every 128-character
screen name was lowered and sorted whole. Now:

- `(lower(player_id) COLLATE "C")`: byte comparisons. Equality finds the same entries in either
  collation; the lookups say COLLATE "C" too, or PostgreSQL would not use the index
  (web/queries.player_id_lower).
- `lower(left(screen_name, 16)) text_pattern_ops`: the prefix search asks the index for the
  first 16 characters and checks the whole name on the entries found (web/queries.name_starts).

PostgreSQL only (SQLite in development scans). On the partitioned table each statement builds
the index of every partition; new partitions copy the parent's (db/partitions.py).
"""

from django.db import migrations

FORWARD = [
    "DROP INDEX IF EXISTS entry_lower_player_id",
    'CREATE INDEX entry_player_id_lower_c ON tournaments_entry ((lower(player_id) COLLATE "C"))',
    "DROP INDEX IF EXISTS entry_lower_screen_name",
    "CREATE INDEX entry_screen_name_prefix ON tournaments_entry "
    "(lower(left(screen_name, 16)) text_pattern_ops) WHERE screen_name <> ''",
]

BACKWARD = [
    "DROP INDEX IF EXISTS entry_player_id_lower_c",
    "CREATE INDEX entry_lower_player_id ON tournaments_entry (lower(player_id))",
    "DROP INDEX IF EXISTS entry_screen_name_prefix",
    "CREATE INDEX entry_lower_screen_name ON tournaments_entry "
    "(lower(screen_name) text_pattern_ops) WHERE screen_name <> ''",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("tournaments", "0011_list_sort_indexes"),
    ]

    operations = [
        migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False),
    ]
