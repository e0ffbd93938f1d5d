"""One meaning per name: "outage" is the Outage model (a site-wide failure of tournaments); the
wallet not answering (cashier down or throttling, database or broker unreachable, a worker
killed) is "wallet unavailable". The job's two fields are renamed (their data kept), the waiting
and failure reasons written on jobs are reworded the same way, and `alerted_at` goes: the
managers are told by the staff notifications on `ledger.posting_failed`, not by the job."""

from django.db import migrations, models

# (old, new) wording of the reasons the posting job writes in last_error.
REWORDED = [
    ("waiting for the wallet (outage since ", "waiting for the wallet (unavailable since "),
    ("outage longer than the budget of ", "wallet unavailable for longer than the budget of "),
]


def _reword(apps, pairs):
    from django.db.models import Value
    from django.db.models.functions import Replace

    PostingJob = apps.get_model("ledger", "PostingJob")
    for old, new in pairs:
        PostingJob.objects.filter(last_error__contains=old).update(
            last_error=Replace("last_error", Value(old), Value(new))
        )


def forwards(apps, schema_editor):
    _reword(apps, REWORDED)


def backwards(apps, schema_editor):
    _reword(apps, [(new, old) for old, new in REWORDED])


class Migration(migrations.Migration):
    dependencies = [("ledger", "0005_keys_and_append_only")]

    operations = [
        migrations.RenameField("postingjob", "outage_since", "wallet_unavailable_since"),
        migrations.RenameField("postingjob", "outage_retries", "wallet_unavailable_retries"),
        migrations.RemoveField("postingjob", "alerted_at"),
        migrations.AlterField(
            model_name="postingjob",
            name="wallet_unavailable_since",
            field=models.DateTimeField(
                blank=True,
                null=True,
                help_text="Since when the wallet is unavailable; None when it answers.",
            ),
        ),
        migrations.AlterField(
            model_name="postingjob",
            name="wallet_unavailable_retries",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Consecutive runs stopped by the wallet being unavailable (sets the backoff).",
            ),
        ),
        migrations.AlterField(
            model_name="postingjob",
            name="retry_at",
            field=models.DateTimeField(
                blank=True,
                null=True,
                help_text="Not before then: the backoff while the wallet is unavailable.",
            ),
        ),
        migrations.AlterField(
            model_name="postingjob",
            name="attempts",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Runs that ended in a real error (not a crash, nor the wallet unavailable).",
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
