from django.urls import path

from compression.pages import export, views

app_name = "console"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("sessions/<uuid:session_id>/", views.timeline, name="timeline"),
    path("messages/<int:message_id>/", views.message, name="message"),
    path("sessions/<uuid:session_id>/events.json", views.events, name="events"),
    path(
        "sessions/<uuid:session_id>/summaries/<int:summary_id>/",
        views.originals,
        name="originals",
    ),
    path("sessions/<uuid:session_id>/compress/", views.compress, name="compress"),
    path(
        "sessions/<uuid:session_id>/summaries/<int:summary_id>/again/",
        views.resummarise,
        name="resummarise",
    ),
    path("sessions/<uuid:session_id>/events/<int:event_id>/probe/", views.probe, name="probe"),
    path("sessions/<uuid:session_id>/reset/", views.reset, name="reset"),
    path("sessions/<uuid:session_id>/pin/<int:position>/", views.pin, name="pin"),
    path("sessions/<uuid:session_id>/export.jsonl", export.export_session, name="export"),
]
