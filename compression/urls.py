from django.urls import path

from compression import views

app_name = "console"
urlpatterns = [
    path("<uuid:session_id>/", views.timeline, name="timeline"),
    path("<uuid:session_id>/compress/", views.compress, name="compress"),
    path("<uuid:session_id>/reset/", views.reset, name="reset"),
]
