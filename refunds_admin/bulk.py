"""Moved to refunds_admin/db/ (the database's fast paths, one face). These names stay importable
from here, with the same signatures, for branches written against the old module; new code
imports refunds_admin.db."""

from refunds_admin.db.copy import Same, insert_columns, insert_rows, rows_of
from refunds_admin.db.ddl import postgres_only, statement_level_foreign_key
from refunds_admin.db.partitions import copy_into_partition, partition_bound, partition_table

__all__ = [
    "Same",
    "copy_into_partition",
    "insert_columns",
    "insert_rows",
    "partition_bound",
    "partition_table",
    "postgres_only",
    "rows_of",
    "statement_level_foreign_key",
]
