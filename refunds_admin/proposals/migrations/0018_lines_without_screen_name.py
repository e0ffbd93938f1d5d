"""A proposal's lines no longer copy their entries' screen names.

A line is its snapshot's entry at the same position, and the entry keeps the screen name the
snapshot gave: the pages, the statement, the export and the players' statements read it from
there (lines.with_screen_names, queries.entries_at). Copied onto each of 100k-300k lines, up to
128 characters apiece, the column was the widest of a prepare's COPY and of every index build
after it (docs/performance.md, "Issue 25: lines without screen names"). Posting and the
fingerprint never read it.

On PostgreSQL the column goes from the partitioned table and so from every proposal's partition
(the old partitions' values stay readable from their entries); reversing it brings back an empty
column.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("proposals", "0017_lines_keyed_by_position_alone")]

    operations = [
        migrations.RemoveField(model_name="payoutline", name="screen_name"),
    ]
