"""A proposal's lines are keyed by (proposal, position) on PostgreSQL: the unique constraint
`line_position_unique` becomes the table's primary key, and the primary key (proposal, id) goes.

Both said the same thing (one row per line of a proposal), and each is an index built on every
partition after its COPY (docs/performance.md, "Issue 25: prepare, Python and PostgreSQL at
once"). `id` stays, Django's handle on a line, filled by its sequence (no writer names it: the
COPY leaves it to the default), so it is unique by construction, no longer enforced by an
index; a lookup by id alone (the read-only admin's line page) reads every partition, as it did
before (the old key began with proposal_id). SQLite keeps its tables as they are.

Adding the primary key builds a unique index on every existing partition while the lines table
is locked: run it when staff are not working in the app.
"""

from django.db import migrations

FORWARD = """
ALTER TABLE proposals_payoutline DROP CONSTRAINT proposals_payoutline_pkey;
ALTER TABLE proposals_payoutline DROP CONSTRAINT line_position_unique;
ALTER TABLE proposals_payoutline
    ADD CONSTRAINT line_position_unique PRIMARY KEY (proposal_id, position);
"""

BACKWARD = """
ALTER TABLE proposals_payoutline DROP CONSTRAINT line_position_unique;
ALTER TABLE proposals_payoutline ADD CONSTRAINT line_position_unique UNIQUE (proposal_id, position);
ALTER TABLE proposals_payoutline
    ADD CONSTRAINT proposals_payoutline_pkey PRIMARY KEY (proposal_id, id);
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [("proposals", "0014_merge_20261202_0036")]

    operations = [migrations.RunPython(forward, backward)]
