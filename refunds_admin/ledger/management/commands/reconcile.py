"""python manage.py reconcile: approved totals against the ledger, and against the cashier each
proposal was paid into (whatever this process's own CASHIER_URL says)."""

from django.core.management.base import BaseCommand, CommandError

from refunds_admin.ledger.selectors import reconcile
from refunds_admin.payouts.money import format_cents


def _money(cents, currency):
    if cents is None:
        return "-"
    return f"{format_cents(cents)} {currency}"


class Command(BaseCommand):
    help = "Compare each approved proposal's total with the credits posted; exit 1 on a mismatch."

    def handle(self, *args, **options):
        rows = reconcile()
        bad = 0
        for row in rows:
            mark = "ok " if row["ok"] else "MISMATCH"
            self.stdout.write(
                f"{mark} proposal {row['proposal']} ({row['status']}): approved "
                f"{_money(row['approved_cents'], row['currency'])}, ledger "
                f"{_money(row['booked_cents'], row['currency'])} in {row['booked_credits']} credits"
                + (
                    f", paid into the cashier at {row['wallet_identity']}"
                    if row["wallet"] == "cashier"
                    else ""
                )
                + (
                    f", cashier {_money(row['cashier_cents'], row['currency'])}"
                    if row["cashier_cents"] is not None
                    else ""
                )
            )
            methods = row.get("by_method") or {}
            if set(methods) - {"cash"}:
                # Per method only where some credit is not cash: an all-cash proposal reads
                # as before.
                for method, cents in methods.items():
                    self.stdout.write(
                        f"    {method}: ledger {_money(cents['ledger_cents'], row['currency'])}"
                        + (
                            f", cashier {_money(cents['cashier_cents'], row['currency'])}"
                            if cents["cashier_cents"] is not None
                            else ""
                        )
                    )
            if any((row.get("tickets") or {}).values()):
                self.stdout.write(
                    f"    tickets returned: ledger {row['tickets']['ledger']}, "
                    f"cashier {row['tickets']['cashier']}"
                )
            for problem in row["problems"]:
                self.stdout.write(f"    - {problem}")
            bad += not row["ok"]
        self.stdout.write(f"{len(rows)} proposals checked, {bad} mismatched")
        if bad:
            raise CommandError(f"{bad} proposal(s) do not reconcile")
