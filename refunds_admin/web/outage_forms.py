"""Forms of the outage pages. They parse and label input; the outage services decide."""

from django import forms

from refunds_admin.incidents.models import Incident
from refunds_admin.tournaments.models import Tournament

from .forms import local_datetime_field


class OutageForm(forms.Form):
    """One failure across many tournaments; the tournaments are chosen from those running at
    the failure time (the candidates list of the page)."""

    failed_at = local_datetime_field("Play failed at")
    cause = forms.ChoiceField(label="Cause", choices=Incident.Cause.choices)
    description = forms.CharField(
        label="What happened", widget=forms.Textarea(attrs={"rows": 3}), required=False
    )
    people_involved = forms.CharField(
        label="People involved",
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text="On-call engineers, support staff, the operator's contact.",
    )
    tournaments = forms.ModelMultipleChoiceField(
        label="Affected tournaments", queryset=Tournament.objects.all(), required=False
    )
    q = forms.CharField(label="Search the running tournaments", required=False)


class OutageResumedForm(forms.Form):
    resumed_at = local_datetime_field("Play resumed at")
    incidents = forms.TypedMultipleChoiceField(
        label="Tournaments where play resumed", coerce=int, choices=(), required=False
    )

    def __init__(self, *args, incident_ids=(), **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["incidents"]
        assert isinstance(field, forms.TypedMultipleChoiceField)
        field.choices = [(pk, pk) for pk in incident_ids]


class AddTournamentForm(forms.Form):
    tournament = forms.ModelChoiceField(
        label="Tournament found later", queryset=Tournament.objects.none()
    )

    def __init__(self, *args, candidates=None, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["tournament"]
        if candidates is not None and isinstance(field, forms.ModelChoiceField):
            field.queryset = candidates
