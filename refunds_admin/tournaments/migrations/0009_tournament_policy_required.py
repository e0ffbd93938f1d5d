import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tournaments", "0008_tournament_policy_version")]

    operations = [
        migrations.AlterField(
            model_name="tournament",
            name="policy_version",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="tournaments",
                to="policies.policyversion",
            ),
        ),
    ]
