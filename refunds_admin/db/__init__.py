"""The database's fast paths, in one place (docs/architecture.md, "The database face").

- copy.py: many rows at once, COPY on PostgreSQL (text or binary, rows or columns), bulk_create
  elsewhere.
- partitions.py: one partition per parent row, filled by COPY and indexed after it; the
  migration step that partitions a table.
- beside.py: rows read from a second thread while Python computes.
- keys.py: the credit key, its Python form beside its SQL form, from the same constants.
- lookups.py: a list of values as one array parameter (`AnyOf`), not one parameter per value.
- ddl.py: migration steps (foreign keys checked once per statement, PostgreSQL-only SQL).

The collector is paused by the engine's one `paused_gc` (refunds_admin.payouts). The measurements
behind each of these are in docs/performance.md, not in comments.
"""

from .beside import fetch_beside
from .copy import Same, copy_binary, insert_columns, insert_rows, rows_of, update_binary
from .ddl import postgres_only, statement_level_foreign_key
from .keys import credit_key, credit_key_sql, key_part, key_part_sql, parse_credit_key
from .lookups import AnyOf
from .partitions import copy_into_partition, partition_bound, partition_table

__all__ = [
    "AnyOf",
    "Same",
    "copy_binary",
    "copy_into_partition",
    "credit_key",
    "credit_key_sql",
    "fetch_beside",
    "insert_columns",
    "insert_rows",
    "key_part",
    "key_part_sql",
    "parse_credit_key",
    "partition_bound",
    "partition_table",
    "postgres_only",
    "rows_of",
    "statement_level_foreign_key",
    "update_binary",
]
