from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "refunds_admin.accounts"
    label = "accounts"
