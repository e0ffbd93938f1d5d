"""Forms of the browser app. They parse and label input; the services decide what is allowed.

Times are typed in the staff member's time zone (the active one) and become aware datetimes,
stored in UTC by the services.
"""

from datetime import UTC
from typing import Any

from django import forms
from django.contrib.auth import authenticate
from django.db.models import Exists, OuterRef

from refunds_admin.accounts import mfa
from refunds_admin.incidents.models import Incident
from refunds_admin.payouts.snapshot import (
    EARLIEST_OFFSET,
    LATEST_OFFSET,
    MAX_CSV_BYTES,
    MAX_DOCUMENT_BYTES,
    NO_SUCH_OFFSET,
)
from refunds_admin.policies.services import known_policy_ids
from refunds_admin.tournaments.models import Tournament


class LocalDateTimeInput(forms.DateTimeInput):
    """A date and time in the staff member's zone. Seconds can be typed (the 20-minute line of
    rule 1 is exact to the second) but are shown only when there are some: a default of whole
    minutes means that typing 06:20 gives 06:20:00, not 06:20 and the seconds of "now"."""

    input_type = "datetime-local"

    def __init__(self, attrs=None):
        super().__init__(attrs={"step": "1", **(attrs or {})}, format="%Y-%m-%dT%H:%M:%S")

    def format_value(self, value):
        if hasattr(value, "second") and not value.second and not value.microsecond:
            return value.strftime("%Y-%m-%dT%H:%M")
        return super().format_value(value)


class LocalDateTimeField(forms.DateTimeField):
    """A time typed in the staff member's zone. The browser's picker sends none of its own; one
    sent with an offset (a script) is read at that offset, as long as a time zone can have it:
    +23:53 is refused naming the field instead of failing at the database."""

    def to_python(self, value):
        result = super().to_python(value)
        if result is not None and result.tzinfo is not None:
            offset = result.utcoffset()
            # The snapshot's bounds (payouts/snapshot.py), for the same reason and words.
            if offset is None or not EARLIEST_OFFSET <= offset <= LATEST_OFFSET:
                raise forms.ValidationError(
                    f"%(value)s {NO_SUCH_OFFSET}.",
                    code="invalid",
                    params={"value": value},
                )
            result = result.astimezone(UTC)
        return result


def local_datetime_field(label, **kwargs):
    return LocalDateTimeField(
        label=label,
        widget=LocalDateTimeInput(),
        help_text="In your time zone (switch it at the top right).",
        **kwargs,
    )


def _at_most(upload, limit):
    """Refuse an upload above the documented limit before it is read (docs/snapshot-limits.md)."""
    if upload is not None and upload.size > limit:
        raise forms.ValidationError(
            f"The file is {upload.size / 2**20:,.1f} MB; at most {limit // 2**20} MB are accepted."
        )
    return upload


class SnapshotUploadForm(forms.Form):
    file = forms.FileField(
        label="Snapshot file (tournament-snapshot/1 JSON)",
        widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
    )

    def clean_file(self):
        return _at_most(self.cleaned_data.get("file"), MAX_DOCUMENT_BYTES)


class CsvImportForm(forms.Form):
    """For staff who only have a chip-count export: two CSV files plus the tournament's facts."""

    external_id = forms.CharField(label="Tournament id (external_id)", max_length=128)
    name = forms.CharField(label="Name", max_length=255)
    currency = forms.CharField(label="Currency (ISO code)", max_length=3, initial="USD")
    buy_in = forms.CharField(label="Buy-in", max_length=20, help_text='e.g. "30.00"')
    fee = forms.CharField(label="Fee", max_length=20, help_text='e.g. "3.00"')
    starts_at = local_datetime_field("Play started at")
    chips_in_play = forms.IntegerField(label="Chips in play (optional cross-check)", required=False)
    bounty = forms.CharField(
        label="Knockout bounty (optional)",
        max_length=20,
        required=False,
        help_text='The bounty part of one entry\'s price, e.g. "30.00" for $30 + $30 KO + $6',
    )
    guarantee = forms.CharField(
        label="Guaranteed prize pool (optional)", max_length=20, required=False
    )
    policy = forms.ChoiceField(
        label="Cancellation policy (optional)",
        required=False,
        help_text="The snapshot's tournament.policy. Empty: a new tournament gets the default "
        "policy; one imported before keeps its own.",
    )
    entries_csv = forms.FileField(
        label="Entries CSV",
        help_text="Columns: entry_id, player_id, screen_name, status, chips, finish_place, "
        "prize_awarded, buy_in_paid, fee_paid, email; for knockouts, rebuys and tickets also "
        "bounty_paid, bounty, bounties_won, rebuys_paid, rebuy_fees_paid, paid_with "
        '("ticket TKT-88121 55.00; cash 11.00"), see docs/formats.md',
    )
    prizes_csv = forms.FileField(
        label="Prize table CSV",
        help_text="Columns: place (3, or a range 10-18), amount, non_cash, description",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The ids a snapshot may name: policies with an approved version.
        self.fields["policy"].choices = [("", "The default policy")] + [  # type: ignore[attr-defined]
            (policy_id, policy_id) for policy_id in sorted(known_policy_ids())
        ]

    def clean_entries_csv(self):
        return _at_most(self.cleaned_data.get("entries_csv"), MAX_CSV_BYTES)

    def clean_prizes_csv(self):
        return _at_most(self.cleaned_data.get("prizes_csv"), MAX_CSV_BYTES)

    def tournament_fields(self):
        """The tournament fields as the snapshot format writes them (strings, ISO times). Of a
        form refused, the fields it could read: the import's check names the rest missing."""
        data = self.cleaned_data
        fields = {
            name: data[name].strip()
            for name in ("external_id", "name", "buy_in", "fee")
            if data.get(name) is not None
        }
        if data.get("currency") is not None:
            fields["currency"] = data["currency"].strip().upper()
        if data.get("starts_at") is not None:
            fields["starts_at"] = data["starts_at"].isoformat()
        if data.get("chips_in_play") is not None:
            fields["chips_in_play"] = data["chips_in_play"]
        for name in ("bounty", "guarantee", "policy"):
            if (data.get(name) or "").strip():
                fields[name] = data[name].strip()
        return fields


def incident_candidates():
    """The tournaments an incident may be recorded for: not frozen (no approved payout) and
    without an incident that is open or cancelled (one incident per failure). The others are
    left out of the list rather than refused after the form is filled."""
    live = Incident.objects.filter(
        tournament=OuterRef("pk"), status__in=[Incident.Status.OPEN, Incident.Status.CANCELLED]
    )
    return (
        Tournament.objects.filter(frozen_at__isnull=True)
        .exclude(Exists(live))
        .order_by("-starts_at", "-id")
    )


class IncidentTournamentField(forms.ModelChoiceField):
    """A tournament from `incident_candidates`. One the list leaves out (a page opened before
    someone else recorded its incident, or before its payout was approved) is refused saying
    why, not "Select a valid choice"."""

    def to_python(self, value):
        try:
            return super().to_python(value)
        except forms.ValidationError:
            key = str(value or "").strip()
            tournament = (
                Tournament.objects.filter(pk=int(key)).first()
                if key.isdigit() and len(key) < 19  # a bigint id, not any text posted
                else None
            )
            if tournament is None:
                raise
            live = tournament.incidents.filter(
                status__in=[Incident.Status.OPEN, Incident.Status.CANCELLED]
            ).first()
            if live is not None:
                raise forms.ValidationError(
                    f"Tournament {tournament.external_id} already has incident {live.pk} "
                    f"({live.get_status_display().lower()}): there is one incident per failure."
                ) from None
            raise forms.ValidationError(
                f"Tournament {tournament.external_id} is frozen: its payout was approved."
            ) from None


class IncidentForm(forms.Form):
    tournament = IncidentTournamentField(
        label="Tournament",
        queryset=Tournament.objects.none(),
        help_text="Tournaments already frozen or with an open or cancelled incident are not "
        "listed.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["tournament"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = incident_candidates()

    failed_at = local_datetime_field("Play failed at")
    cause = forms.ChoiceField(label="Cause", choices=Incident.Cause.choices)
    description = forms.CharField(
        label="What happened", widget=forms.Textarea(attrs={"rows": 4}), required=False
    )
    # Shown with the rule preview when the typed time is before the tournament's start.
    before_start_confirmed = forms.BooleanField(
        label="Yes: play failed before the tournament's start (rule 1, full refund)",
        required=False,
    )


class RestartAttemptForm(forms.Form):
    attempted_at = local_datetime_field("Attempted at")
    succeeded = forms.BooleanField(label="Play restarted", required=False)
    note = forms.CharField(label="Note", required=False, widget=forms.Textarea(attrs={"rows": 2}))


class ResumedForm(forms.Form):
    resumed_at = local_datetime_field("Play resumed at")


class ReasonForm(forms.Form):
    reason = forms.CharField(label="Reason", widget=forms.Textarea(attrs={"rows": 3}))


class JustificationForm(forms.Form):
    justification = forms.CharField(
        label="Why management finds this (the grounds, for the record)",
        widget=forms.Textarea(attrs={"rows": 3}),
    )


class ApproveForm(forms.Form):
    """Approval quotes the fingerprint the manager saw and needs their password again and a
    current code from their authenticator app. Wrong passwords count towards the same lockout
    as the sign-in page (django-axes); wrong codes slow down django-otp's next check."""

    fingerprint = forms.CharField(widget=forms.HiddenInput, max_length=64)
    password = forms.CharField(
        label="Your password (to confirm it is you approving)",
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        strip=False,
    )
    otp_token = forms.CharField(
        label="Code from your authenticator app",
        max_length=8,
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "pattern": "[0-9 ]*"}
        ),
    )

    def __init__(self, *args, user, request=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.request = request
        self.device = None

    def clean_password(self):
        password = self.cleaned_data["password"]
        if authenticate(self.request, username=self.user.get_username(), password=password) is None:
            raise forms.ValidationError("That is not your password.")
        return password

    def clean(self):
        data = super().clean() or self.cleaned_data
        # The code is checked only after the password: it is used up once accepted.
        if "password" in data and data.get("otp_token"):
            self.device = mfa.verify_code(self.user, data["otp_token"])
            if self.device is None:
                self.add_error(
                    "otp_token",
                    "That code does not match your authenticator app (each code works once; "
                    "wait for the next one).",
                )
        return data


class RejectForm(forms.Form):
    reason = forms.CharField(
        label="Reason for rejecting", widget=forms.Textarea(attrs={"rows": 3}), max_length=2000
    )


class LineFilterForm(forms.Form):
    q = forms.CharField(
        label="Player id, entry id or screen name",
        required=False,
        help_text="Ids exactly; a screen name by its first letters, in any case.",
    )
    show = forms.ChoiceField(
        label="Show",
        required=False,
        choices=[
            ("paid", "Entries paid"),
            ("", "All entries"),
            ("active", "Active"),
            ("eliminated", "Eliminated"),
            ("capped", "Capped"),
        ],
    )
    sort = forms.ChoiceField(
        label="Sort by",
        required=False,
        choices=[
            ("position", "Snapshot order"),
            ("-position", "Snapshot order, last first"),
            ("chips", "Chips, most first"),
            ("-chips", "Chips, fewest first"),
            ("total", "Total, largest first"),
            ("-total", "Total, smallest first"),
        ],
    )


class AuditFilterForm(forms.Form):
    tournament = forms.CharField(label="Tournament id", required=False)
    player = forms.CharField(label="Player id", required=False)
    user = forms.CharField(label="User", required=False)
    action = forms.CharField(label="Action", required=False, help_text="e.g. proposal.approved")
    since = forms.DateField(
        label="From", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        label="To (inclusive)", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )


class PlayerLookupForm(forms.Form):
    q = forms.CharField(
        label="Player id, screen name (start), e-mail or amount refunded",
        max_length=254,
        help_text="Any case: P123, alice (finds Alice99), alice@example.com, 815.33",
    )


class ReportRangeForm(forms.Form):
    start = forms.DateField(
        required=False, label="Posted from", widget=forms.DateInput(attrs={"type": "date"})
    )
    end = forms.DateField(
        required=False, label="to (inclusive)", widget=forms.DateInput(attrs={"type": "date"})
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("start") and data.get("end") and data["start"] > data["end"]:
            self.add_error("end", "The end of the range is before its start.")
        return data
