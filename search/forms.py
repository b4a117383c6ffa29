from __future__ import annotations

from django import forms

from search.filters import storable_time
from search.query import MAX_QUERY_CHARS
from sessions_app.models import Message


class SearchForm(forms.Form):
    q = forms.CharField(label="Search", max_length=MAX_QUERY_CHARS, strip=False)
    session = forms.UUIDField(required=False, label="Session id")
    role = forms.ChoiceField(required=False, choices=[("", "any role"), *Message.Role.choices])
    kind = forms.ChoiceField(
        required=False,
        choices=[
            ("", "any kind"),
            ("live", "live"),
            ("summary", "summary"),
            ("archived", "archived"),
        ],
    )
    since = forms.DateTimeField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    until = forms.DateTimeField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    include_rolled_back = forms.BooleanField(required=False, label="include rolled-back rows")
    window = forms.IntegerField(required=False, min_value=0, max_value=20, initial=2)
    page = forms.IntegerField(required=False, min_value=1, max_value=500, initial=1)
    before = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def clean_q(self) -> str:
        value = self.cleaned_data["q"]
        if not value.strip():
            raise forms.ValidationError("Type at least one word or character.")
        return value

    def clean_since(self):
        return self._storable("since")

    def clean_until(self):
        return self._storable("until")

    def _storable(self, name: str):
        try:
            return storable_time(self.cleaned_data[name])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        super().clean()
        data = self.cleaned_data  # what Form.clean returns
        since, until = data.get("since"), data.get("until")
        if since and until and since >= until:
            self.add_error("until", "'since' must be earlier than 'until'.")  # shown beside it
        return data
