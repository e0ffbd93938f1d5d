from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "refunds_admin.ledger"
    label = "ledger"
