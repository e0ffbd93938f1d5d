from django.apps import AppConfig


class IncidentsConfig(AppConfig):
    name = "refunds_admin.incidents"
    label = "incidents"
