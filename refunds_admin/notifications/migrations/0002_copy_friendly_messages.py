"""A posted proposal writes one StatementMessage per credited player, 100k in one statement
(issue 15). Measured on 100k messages (docs/performance.md, "Approve + post"):

- the two foreign keys, deferred as Django makes them, queued one check per row and ran them at
  commit: about 1.9 s. They are checked once per statement instead (refunds_admin/bulk.py), as
  for entries and proposal lines; deleting a job or proposal that has messages is still refused.
- three indexes nobody reads: job_id and proposal_id alone (the (job, state, id) index and the
  (proposal, player_id) unique constraint start with them) and the LIKE (pattern_ops) index
  Django adds beside the unique idempotency key (keys are looked up whole): about 1.5 s.
"""

import django.db.models.deletion
from django.db import migrations, models

from refunds_admin.bulk import postgres_only, statement_level_foreign_key

JOB_CREATE, JOB_DROP = statement_level_foreign_key(
    "notifications_statementmessage", "job_id", "notifications_statementjob"
)
PROPOSAL_CREATE, PROPOSAL_DROP = statement_level_foreign_key(
    "notifications_statementmessage", "proposal_id", "proposals_payoutproposal"
)
DROP_LIKE_INDEX = """
DO $$
DECLARE name text;
BEGIN
    FOR name IN SELECT indexname FROM pg_indexes
                WHERE tablename = 'notifications_statementmessage'
                  AND indexdef LIKE '%varchar_pattern_ops%'
    LOOP
        EXECUTE format('DROP INDEX %I', name);
    END LOOP;
END $$;
"""
CREATE_LIKE_INDEX = """
CREATE INDEX IF NOT EXISTS notifications_statementmessage_idempotency_key_like
    ON notifications_statementmessage (idempotency_key varchar_pattern_ops);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0001_statements_and_staff_emails"),
        ("proposals", "0008_outage_prepare_runs"),
    ]

    operations = [
        migrations.AlterField(
            model_name="statementmessage",
            name="job",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="messages",
                to="notifications.statementjob",
            ),
        ),
        migrations.AlterField(
            model_name="statementmessage",
            name="proposal",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="proposals.payoutproposal",
            ),
        ),
        migrations.RunPython(postgres_only(JOB_CREATE), postgres_only(JOB_DROP)),
        migrations.RunPython(postgres_only(PROPOSAL_CREATE), postgres_only(PROPOSAL_DROP)),
        migrations.RunPython(postgres_only(DROP_LIKE_INDEX), postgres_only(CREATE_LIKE_INDEX)),
    ]
