from django.apps import AppConfig


class ProposalsConfig(AppConfig):
    name = "refunds_admin.proposals"
    label = "proposals"
