from django.urls import path

from compression.pages import views

app_name = "console"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("sessions/<uuid:session_id>/", views.timeline, name="timeline"),
    path("sessions/<uuid:session_id>/compress/", views.compress, name="compress"),
    path("sessions/<uuid:session_id>/reset/", views.reset, name="reset"),
]
