"""Password reset: the link goes by e-mail (never to the logs in production, see test_project),
requests are limited per address, and the answer takes as long for an unknown address as for a
known one, so that timing does not tell who has an account."""

import time

import pytest
from django.core import mail
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_with_email(support):
    support.email = "sam@example.com"
    support.save()
    return support


def _request(client, email):
    started = time.monotonic()
    response = client.post(reverse("password_reset"), {"email": email})
    return response, time.monotonic() - started


def test_known_and_unknown_addresses_get_the_same_answer_in_the_same_time(
    client, staff_with_email, settings, monkeypatch
):
    """The request only queues the e-mail (a worker sends it), the same for any address."""
    from refunds_admin.accounts import tasks

    queued = []
    monkeypatch.setattr(tasks.send_password_reset, "delay", lambda *a, **k: queued.append(a))
    settings.PASSWORD_RESET_MIN_SECONDS = 0.3
    _request(client, "warm@example.com")  # (the process's first request loads templates)
    known, known_took = _request(client, "sam@example.com")
    unknown, unknown_took = _request(client, "nobody@example.com")
    assert known.status_code == unknown.status_code == 302
    assert known["Location"] == unknown["Location"]
    assert queued[1:] == [("sam@example.com",), ("nobody@example.com",)]
    assert known_took >= 0.3 and unknown_took >= 0.3
    assert abs(known_took - unknown_took) < 0.2


def test_the_worker_e_mails_the_link_to_an_account_only(staff_with_email):
    from refunds_admin.accounts.tasks import send_password_reset

    send_password_reset("nobody@example.com", domain="refunds.example.com", use_https=True)
    assert mail.outbox == []
    send_password_reset("sam@example.com", domain="refunds.example.com", use_https=True)
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["sam@example.com"]
    assert "https://refunds.example.com/accounts/reset/" in mail.outbox[0].body


def test_reset_requests_are_limited_per_address(client, staff_with_email, settings):
    settings.PASSWORD_RESET_MIN_SECONDS = 0
    settings.PASSWORD_RESET_LIMIT = 3
    answers = [_request(client, f"guess{i}@example.com")[0].status_code for i in range(4)]
    assert answers == [302, 302, 302, 429]
    assert _request(client, "sam@example.com")[0].status_code == 429
    assert mail.outbox == []
