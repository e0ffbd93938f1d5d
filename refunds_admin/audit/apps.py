from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "refunds_admin.audit"
    label = "audit"
