from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PoliciesConfig(AppConfig):
    name = "refunds_admin.policies"
    label = "policies"
    verbose_name = "Cancellation policies"

    def ready(self) -> None:
        post_migrate.connect(_presets_present, sender=self)


def _presets_present(sender: object, using: str = "default", **kwargs: object) -> None:
    """The presets and the default policy exist after every migrate, and after a flush (a test
    database emptied between transactional tests): migration 0002 loads them once; this puts
    back only what is missing."""
    from .services import load_presets

    load_presets(using=using)
