from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "refunds_admin.audit"
    label = "audit"

    def ready(self):
        from . import signals  # noqa: F401 (connects the receivers)
