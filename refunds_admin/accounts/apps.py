from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "refunds_admin.accounts"
    label = "accounts"

    def ready(self):
        # Make our Celery app the current one in every Django process, so that shared tasks
        # are sent to the configured broker. (Not imported in refunds_admin/__init__.py: the
        # pure engine's command line would pay for loading Celery.)
        from refunds_admin.celery import app  # noqa: F401
