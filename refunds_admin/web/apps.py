from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "refunds_admin.web"
    label = "web"
