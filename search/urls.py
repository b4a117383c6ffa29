from django.urls import path

from search.views import search_page

app_name = "search"
urlpatterns = [path("", search_page, name="page")]
