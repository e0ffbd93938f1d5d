from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "refunds_admin.notifications"
    label = "notifications"

    def ready(self):
        from . import receivers  # noqa: F401  connects to audit's event_recorded
