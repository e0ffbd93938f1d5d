from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "refunds_admin.audit"
    label = "audit"

    def ready(self):
        from . import access  # noqa: F401 (audits changes to users, roles, API clients)
