from django.apps import AppConfig


class OutagesConfig(AppConfig):
    name = "refunds_admin.outages"
    label = "outages"
