from django.apps import AppConfig


class TournamentsConfig(AppConfig):
    name = "refunds_admin.tournaments"
    label = "tournaments"

    def ready(self):
        from . import signals  # noqa: F401 (audits API clients)
