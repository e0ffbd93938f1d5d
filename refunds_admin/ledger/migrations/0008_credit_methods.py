"""Credits name their method (cash, tournament money, ticket) and a ticket its id; the finance
report's rows gain the money per method and the overlay the house kept.

Postings recorded before this migration were all cash: their cash_cents is their cents.
(After the merge of the formats work's 0006_policy_components and 0006_wallet_unavailable.)"""

import django.db.models.expressions
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ledger', '0007_merge_0006_policy_components_0006_wallet_unavailable'),
        ('proposals', '0009_line_indexes_per_partition'),
    ]

    operations = [
        migrations.AddField(
            model_name='credit',
            name='method',
            field=models.CharField(choices=[('cash', 'Cash'), ('tournament_money', 'Tournament money'), ('ticket', 'Ticket')], db_default='cash', default='cash', max_length=20),
        ),
        migrations.AddField(
            model_name='credit',
            name='ticket_id',
            field=models.CharField(blank=True, db_default='', default='', max_length=128),
        ),
        migrations.AddField(
            model_name='postedtotal',
            name='cash_cents',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='postedtotal',
            name='overlay_kept_cents',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='postedtotal',
            name='ticket_cents',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='postedtotal',
            name='tickets',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='postedtotal',
            name='tournament_money_cents',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AlterField(
            model_name='credit',
            name='component',
            field=models.CharField(choices=[('buy_in_refund', 'Buy-in refund'), ('next_prize', 'Next prize'), ('chip_equity', 'Chip equity'), ('fee_refund', 'Fee refund'), ('equal_share', 'Equal share'), ('bounty_refund', 'Bounty'), ('cash_refund', 'Refund in cash'), ('tournament_money', 'Refund in tournament money'), ('ticket', 'Ticket returned')], max_length=20),
        ),
        migrations.AlterField(
            model_name='credit',
            name='key',
            field=models.CharField(help_text='proposal-<id>/<entry id>/<component>, and /<ticket id> for a ticket', max_length=300, primary_key=True, serialize=False),
        ),
        migrations.RunSQL(
            "UPDATE ledger_postedtotal SET cash_cents = cents", migrations.RunSQL.noop
        ),
        migrations.AddConstraint(
            model_name='credit',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('method', 'ticket'), models.Q(('ticket_id', ''), _negated=True)), models.Q(models.Q(('method', 'ticket'), _negated=True), ('ticket_id', '')), _connector='OR'), name='credit_ticket_named'),
        ),
        migrations.AddConstraint(
            model_name='credit',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('component', 'ticket'), ('method', 'ticket')), models.Q(('component', 'tournament_money'), ('method', 'tournament_money')), models.Q(models.Q(('component__in', ['ticket', 'tournament_money']), _negated=True), ('method', 'cash')), _connector='OR'), name='credit_method_of_component'),
        ),
        migrations.AddConstraint(
            model_name='credit',
            constraint=models.UniqueConstraint(condition=models.Q(('method', 'ticket')), fields=('proposal', 'ticket_id'), name='credit_ticket_once'),
        ),
        migrations.AddConstraint(
            model_name='postedtotal',
            constraint=models.CheckConstraint(condition=models.Q(('cents', django.db.models.expressions.CombinedExpression(django.db.models.expressions.CombinedExpression(models.F('cash_cents'), '+', models.F('tournament_money_cents')), '+', models.F('ticket_cents')))), name='posted_total_is_sum_of_methods'),
        ),
    ]
