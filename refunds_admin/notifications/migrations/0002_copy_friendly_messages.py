"""A posted proposal writes one StatementMessage per credited player, 100k in one statement
(issue 15). Measured on 100k messages (docs/performance.md, "Approve + post"):

- the two foreign keys, deferred as Django makes them, queued one check per row and ran them at
  commit: about 1.9 s. They are checked once per statement instead (refunds_admin/bulk.py), as
  for entries and proposal lines; deleting a job or proposal that has messages is still refused.
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

from refunds_admin.bulk import postgres_only, statement_level_foreign_key

JOB_CREATE, JOB_DROP = statement_level_foreign_key(
    "notifications_statementmessage", "job_id", "notifications_statementjob"
)
PROPOSAL_CREATE, PROPOSAL_DROP = statement_level_foreign_key(
    "notifications_statementmessage", "proposal_id", "proposals_payoutproposal"
)


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
    ]
