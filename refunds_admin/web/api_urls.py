from django.urls import path

from . import api

app_name = "api"
urlpatterns = [
    path("snapshots", api.snapshots, name="snapshots"),
]
