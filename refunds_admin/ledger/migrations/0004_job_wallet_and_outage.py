from django.db import migrations, models
from django.db.models import Q


def copy_wallet_from_the_approval(apps, schema_editor):
    """Jobs written before the wallet was recorded: the approval's posting order says it."""
    PostingJob = apps.get_model("ledger", "PostingJob")
    for job in PostingJob.objects.select_related("proposal").filter(wallet=""):
        job.wallet = job.proposal.wallet or "ledger"
        job.wallet_identity = job.proposal.wallet_identity if job.wallet == "cashier" else ""
        job.save(update_fields=["wallet", "wallet_identity"])
    PostingJob.objects.filter(state="failed", last_error="").update(
        last_error="failed before reasons were recorded"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0003_posted_total"),
        ("proposals", "0006_posting_order_wallet"),
    ]

    operations = [
        migrations.AddField(
            model_name="postingjob",
            name="wallet",
            field=models.CharField(
                default="",
                help_text="'ledger' or 'cashier': copied from the approval's posting order.",
                max_length=10,
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="postingjob",
            name="wallet_identity",
            field=models.CharField(
                blank=True,
                help_text="The cashier's base URL at approval ('' = ledger).",
                max_length=500,
            ),
        ),
        migrations.AddField(
            model_name="postingjob",
            name="outage_since",
            field=models.DateTimeField(
                blank=True, null=True, help_text="Start of the current outage; None when healthy."
            ),
        ),
        migrations.AddField(
            model_name="postingjob",
            name="outage_retries",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Consecutive runs stopped by the current outage (sets the backoff).",
            ),
        ),
        migrations.AddField(
            model_name="postingjob",
            name="retry_at",
            field=models.DateTimeField(
                blank=True,
                null=True,
                help_text="Not before then: the backoff of the current outage.",
            ),
        ),
        migrations.AddField(
            model_name="postingjob",
            name="alerted_at",
            field=models.DateTimeField(
                blank=True,
                null=True,
                help_text="When the managers were alerted that the outage outlasted the budget.",
            ),
        ),
        migrations.AlterField(
            model_name="postingjob",
            name="attempts",
            field=models.PositiveIntegerField(
                default=0, help_text="Runs that ended in a real error (not a crash, nor an outage)."
            ),
        ),
        migrations.RunPython(copy_wallet_from_the_approval, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="postingjob",
            constraint=models.CheckConstraint(
                condition=Q(wallet="ledger", wallet_identity="")
                | (Q(wallet="cashier") & ~Q(wallet_identity="")),
                name="posting_job_names_its_wallet",
            ),
        ),
        migrations.AddConstraint(
            model_name="postingjob",
            constraint=models.CheckConstraint(
                condition=~Q(state="failed") | ~Q(last_error=""), name="failed_job_says_why"
            ),
        ),
    ]
