from django.apps import AppConfig


class PoliciesConfig(AppConfig):
    name = "refunds_admin.policies"
    label = "policies"
    verbose_name = "Cancellation policies"
