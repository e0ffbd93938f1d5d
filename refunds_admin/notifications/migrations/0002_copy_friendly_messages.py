"""A posted proposal writes one StatementMessage per credited player, 100k in one statement
(issue 15). Measured on 100k messages (docs/performance.md, "Approve + post"):

- the two foreign keys, deferred as Django makes them, queued one check per row and ran them at
  commit: about 1.9 s. They are checked once per statement instead (refunds_admin/db/), as
  for entries and proposal lines; deleting a job or proposal that has messages is still refused.
  Updates (the outcomes of each batch) are not checked, as a foreign key whose column does not
  change is not: a message may simply never change its job or proposal (STAY below).
- four indexes that bought nothing: job_id and proposal_id alone (the (job, state, id) index
  and the (proposal, player_id) unique constraint start with them), and the unique idempotency
  key with its LIKE (pattern_ops) twin: the key is made of the proposal and the player, which
  one_statement_per_player already keeps unique, and a check now holds it to exactly that.
  About 2 s together.
"""

import django.db.models.deletion
import django.db.models.functions.comparison
import django.db.models.functions.text
from django.db import migrations, models

from refunds_admin.db.ddl import postgres_only, statement_level_foreign_key

JOB_CREATE, JOB_DROP = statement_level_foreign_key(
    "notifications_statementmessage", "job_id", "notifications_statementjob"
)
PROPOSAL_CREATE, PROPOSAL_DROP = statement_level_foreign_key(
    "notifications_statementmessage", "proposal_id", "proposals_payoutproposal"
)

# The statement-level checks above also run after every UPDATE, taking KEY SHARE locks on the
# job and the proposal: every batch of outcomes would then lock the job row, which the retry and
# the next run lock FOR UPDATE in the other order. A foreign key does not do that when its
# column does not change, and messages never change job or proposal: they are refused that
# instead, row by row and only when the UPDATE names those columns.
STAY = """
DROP TRIGGER notifications_statementmessage_job_id_exists_on_update
    ON notifications_statementmessage;
DROP TRIGGER notifications_statementmessage_proposal_id_exists_on_update
    ON notifications_statementmessage;
CREATE FUNCTION notifications_statementmessage_stays() RETURNS trigger AS $$
BEGIN
    IF NEW.job_id IS DISTINCT FROM OLD.job_id
       OR NEW.proposal_id IS DISTINCT FROM OLD.proposal_id THEN
        RAISE EXCEPTION 'statement message %: a message stays with its job and proposal', OLD.id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER notifications_statementmessage_stays
    BEFORE UPDATE OF job_id, proposal_id ON notifications_statementmessage
    FOR EACH ROW EXECUTE FUNCTION notifications_statementmessage_stays();
"""
UNSTAY = """
DROP TRIGGER IF EXISTS notifications_statementmessage_stays ON notifications_statementmessage;
DROP FUNCTION IF EXISTS notifications_statementmessage_stays();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0001_statements_and_staff_emails"),
        ("proposals", "0008_outage_prepare_runs"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="statementmessage",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "idempotency_key",
                        django.db.models.functions.text.Concat(
                            models.Value("statement/proposal-"),
                            django.db.models.functions.comparison.Cast(
                                "proposal_id", models.CharField()
                            ),
                            models.Value("/"),
                            "player_id",
                        ),
                    )
                ),
                name="statement_key_of_proposal_and_player",
            ),
        ),
        migrations.AlterField(
            model_name="statementmessage",
            name="idempotency_key",
            field=models.CharField(max_length=300),
        ),
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
        migrations.RunPython(postgres_only(STAY), postgres_only(UNSTAY)),
    ]
