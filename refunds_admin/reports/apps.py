from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "refunds_admin.reports"
    label = "reports"
