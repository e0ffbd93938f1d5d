"""Staff pages posted as a person's browser posts them, for the tests that need the page's own
path rather than the service behind it."""

from datetime import timedelta

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone


def import_csv(
    client, entries, prizes, *, external_id, names=("entries.csv", "prizes.csv"), **extra
):
    """The import page's CSV form, posted with these two files and a tournament an hour old
    (`extra`: further form fields, such as policy)."""
    return client.post(
        reverse("tournament_import"),
        {
            "kind": "csv",
            "external_id": external_id,
            "name": "Export",
            "currency": "USD",
            "buy_in": "30.00",
            "fee": "3.00",
            "starts_at": timezone.localtime(timezone.now() - timedelta(hours=1)).strftime(
                "%Y-%m-%dT%H:%M"
            ),
            "entries_csv": SimpleUploadedFile(names[0], entries.encode()),
            "prizes_csv": SimpleUploadedFile(names[1], prizes.encode()),
            **extra,
        },
    )


def approve_on_page(client, proposal, manager, **headers):
    """The approval page's form, sent by `manager` (signed in on `client`) with their password
    (the test users' "pw-<username>") and a current authenticator code; `headers` as
    client.post takes them (HTTP_X_REQUEST_ID=...)."""
    from tests.support.factories import totp_code

    return client.post(
        reverse("proposal_approval", args=[proposal.pk]),
        {
            "fingerprint": proposal.fingerprint,
            "password": f"pw-{manager.username}",
            "otp_token": totp_code(manager),
        },
        **headers,
    )
