from django.apps import AppConfig


class TournamentsConfig(AppConfig):
    name = "refunds_admin.tournaments"
    label = "tournaments"
