from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from agent.mcp import http as mcp_http
from hermes_site import health, metrics
from hermes_site.api import api

admin.site.site_header = "Hermes Memory"
# The admin index lists every model; a sidebar listing them again on every page takes a
# quarter of a laptop screen from the lists (the session list needs its width).
admin.site.enable_nav_sidebar = False
admin.site.site_title = "Hermes Memory"
admin.site.index_title = "Operator console"

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("mcp", mcp_http.endpoint, name="mcp"),
    path("console/search/", include("search.urls")),
    path("console/", include("compression.urls")),
]
