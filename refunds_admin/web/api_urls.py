from django.urls import path

from . import api, api_outages

app_name = "api"
urlpatterns = [
    path("snapshots", api.snapshots, name="snapshots"),
    path("outages", api_outages.outages, name="outages"),
]
