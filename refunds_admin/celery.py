import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")

app = Celery("refunds_admin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
