from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "refunds_admin.ledger"
    label = "ledger"

    def ready(self):
        # Register the ledger's tasks by name (the proposals layer queues "ledger.post_proposal"
        # by name after an approval commits, without importing the ledger).
        from . import tasks  # noqa: F401
