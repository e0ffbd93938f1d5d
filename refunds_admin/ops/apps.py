from django.apps import AppConfig


class OpsConfig(AppConfig):
    """What the operator's platform sees: /healthz, Celery heartbeats, request logs.

    Sits below every domain app (imports none of them), beside audit."""

    name = "refunds_admin.ops"
    label = "ops"
    verbose_name = "Operations"
