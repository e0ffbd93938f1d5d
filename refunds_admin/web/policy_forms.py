"""Forms of the policy pages. They parse and label input; the policy services and the engine's
`parse_policy` decide (one validator: a refused field is named by the engine)."""

from typing import Any

from django import forms
from django.contrib.auth import authenticate

from refunds_admin.policies.models import PolicyVersion
from refunds_admin.policies.services import policy_problems

POLICY_FILE_BYTES = 64 * 1024  # a policy document is a few hundred bytes


class PolicyUploadForm(forms.Form):
    file = forms.FileField(
        label="Policy file (cancellation-policy/1 JSON)",
        widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data.get("file")
        if upload is not None and upload.size > POLICY_FILE_BYTES:
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; a policy is at most {POLICY_FILE_BYTES:,}."
            )
        return upload


class PolicyFieldsForm(forms.Form):
    """A policy's fields, typed: the document built from them goes to the same validator as a
    file. The version number is not typed: it is the next one."""

    id = forms.CharField(
        label="Policy id", max_length=63, help_text="Lower-case letters, digits and dashes."
    )
    title = forms.CharField(label="Title", max_length=255)
    management_finding = forms.CharField(
        label="Management's finding (the words staff and players read)", max_length=500
    )
    within_minutes = forms.IntegerField(
        label="Full refund window (minutes after the start)",
        required=False,
        help_text="Empty: no automatic window.",
    )
    before_first_elimination = forms.BooleanField(
        label="Full refund while no entry is eliminated", required=False
    )
    returned = forms.ChoiceField(
        label="Before the money: returned to each active entry",
        choices=[
            ("buy_in_and_rebuys", "The buy-in and rebuys"),
            ("buy_in", "The first buy-in"),
            ("nothing", "Nothing"),
        ],
    )
    not_in_the_money_equal_share_percent = forms.IntegerField(
        label="Before the money: equal share (%)", initial=0
    )
    in_the_money_equal_share_percent = forms.IntegerField(
        label="In the money: equal share (%)", initial=0
    )
    first_place_cap = forms.BooleanField(label="Cap every entry at first prize", required=False)
    overlay = forms.ChoiceField(
        label="A guarantee's overlay before the money",
        choices=[("paid", "Paid out with the pool"), ("returned_to_house", "Kept by the house")],
    )
    refund_form = forms.ChoiceField(
        label="Full refunds returned",
        choices=[("as_paid", "As paid (a ticket as that ticket)"), ("cash", "All in cash")],
    )

    def document(self) -> dict[str, Any]:
        """The cancellation-policy/1 document of the typed fields. Of a form refused, a field
        it could not read is None, which the engine refuses in turn (add_other_problems)."""
        d = self.cleaned_data.get
        return {
            "format": "cancellation-policy/1",
            "id": d("id"),
            "version": 1,  # replaced by the next number by the service
            "title": d("title"),
            "management_finding": d("management_finding"),
            "full_refund": {
                "within_minutes": d("within_minutes"),
                "before_first_elimination": d("before_first_elimination"),
            },
            "not_in_the_money": {
                "returned": d("returned"),
                "equal_share_percent": d("not_in_the_money_equal_share_percent"),
            },
            "in_the_money": {"equal_share_percent": d("in_the_money_equal_share_percent")},
            "first_place_cap": d("first_place_cap"),
            "overlay": d("overlay"),
            "refund_form": d("refund_form"),
        }

    def add_other_problems(self) -> None:
        """The form refused a field: the engine checks the others all the same (nothing is
        stored), so that every problem is named in one round, not the next one only after this
        one is fixed. What the form already said about a field is not said again."""
        for where, what in policy_problems(self.document()):
            name = self.FIELD_OF.get(where, where)
            if name in self.fields and name not in self.errors:
                self.add_error(name, what)

    @classmethod
    def initial_from(cls, version: PolicyVersion) -> dict[str, Any]:
        p = version.engine()
        return {
            "id": p.id,
            "title": p.title,
            "management_finding": p.management_finding,
            "within_minutes": p.within_minutes,
            "before_first_elimination": p.before_first_elimination,
            "returned": p.not_in_the_money_returned,
            "not_in_the_money_equal_share_percent": p.not_in_the_money_equal_share_percent,
            "in_the_money_equal_share_percent": p.in_the_money_equal_share_percent,
            "first_place_cap": p.first_place_cap,
            "overlay": p.overlay,
            "refund_form": p.refund_form,
        }

    # The engine names fields by their place in the document; the form's fields by name.
    FIELD_OF = {
        "full_refund.within_minutes": "within_minutes",
        "full_refund.before_first_elimination": "before_first_elimination",
        "not_in_the_money.returned": "returned",
        "not_in_the_money.equal_share_percent": "not_in_the_money_equal_share_percent",
        "in_the_money.equal_share_percent": "in_the_money_equal_share_percent",
    }


class PolicyApproveForm(forms.Form):
    """Approval quotes the SHA-256 of the version read, and needs the manager's password again
    and a current code from their authenticator app (checked by the service, which uses it up)."""

    sha256 = forms.CharField(widget=forms.HiddenInput, max_length=64)
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

    def __init__(self, *args: Any, user: Any, request: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.request = request

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if authenticate(self.request, username=self.user.get_username(), password=password) is None:
            raise forms.ValidationError("That is not your password.")
        return password


class PolicyRejectForm(forms.Form):
    reason = forms.CharField(
        label="Reason for rejecting", widget=forms.Textarea(attrs={"rows": 3}), max_length=2000
    )


class TournamentPolicyForm(forms.Form):
    version = forms.ModelChoiceField(
        label="Policy version",
        queryset=PolicyVersion.objects.filter(status=PolicyVersion.Status.APPROVED).order_by(
            "policy_id", "-version"
        ),
    )
    reason = forms.CharField(
        label="Why this tournament runs under it", widget=forms.Textarea(attrs={"rows": 2})
    )
