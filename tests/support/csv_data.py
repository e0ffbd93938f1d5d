"""A small chip-count export as CSV files and the tournament fields of the import form: the
data the CSV import tests and the role tests share."""

from datetime import timedelta

from django.utils import timezone

FIELDS = {
    "external_id": "CSV-1",
    "name": "Chip-count export",
    "currency": "USD",
    "buy_in": "30.00",
    "fee": "3.00",
    "chips_in_play": "100000",
}

ENTRIES_CSV = """entry_id,player_id,screen_name,status,chips,buy_in_paid,fee_paid,finish_place,prize_awarded
e1,p1,ace,active,40000,,,,
e2,p2,king,active,30000,,,,
e3,p3,,active,20000,,,,
e4,p4,,active,10000,,,,
e5,p5,,eliminated,,0.00,0.00,5,
e6,p6,,eliminated,,,,6,
"""

PRIZES_CSV = """place,amount,non_cash,description
1,500.00,yes,Package
2,300.00,,
3-4,200.00,no,
"""


def csv_fields(**changes):
    fields = dict(FIELDS, starts_at=(timezone.now() - timedelta(hours=1)).isoformat())
    fields.update(changes)
    return fields
