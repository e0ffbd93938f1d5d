import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("proposals", "0010_proposal_policy_version")]

    operations = [
        migrations.AlterField(
            model_name="payoutproposal",
            name="policy_version",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="proposals",
                to="policies.policyversion",
            ),
        ),
    ]
