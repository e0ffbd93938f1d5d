import pytest
from django.urls import reverse


@pytest.mark.django_db
def test_it_signs_in_with_the_right_password(client, support):
    response = client.post(
        reverse("login"), {"username": support.username, "password": "pw-sam_support"}
    )
    assert response.status_code == 302
    assert client.get(reverse("dashboard")).status_code == 200


@pytest.mark.django_db
def test_it_refuses_the_sixth_attempt_after_five_failures_even_with_the_right_password(
    client, support
):
    for _ in range(5):
        response = client.post(reverse("login"), {"username": support.username, "password": "nope"})
        assert response.status_code == 200
        assert b"Please enter a correct username and password" in response.content
    response = client.post(
        reverse("login"), {"username": support.username, "password": "pw-sam_support"}
    )
    assert response.status_code == 429
    assert b"Too many failed sign-in attempts" in response.content
    assert client.get(reverse("dashboard")).status_code == 302  # still signed out


@pytest.mark.django_db
def test_it_counts_failures_per_username_and_address(client, support, manager):
    for _ in range(5):
        client.post(reverse("login"), {"username": support.username, "password": "nope"})
    # Another account from the same address is not locked out by someone guessing support's.
    response = client.post(
        reverse("login"), {"username": manager.username, "password": "pw-maria_manager"}
    )
    assert response.status_code == 302
    # The same account from another address is not locked out either.
    client.logout()
    response = client.post(
        reverse("login"),
        {"username": support.username, "password": "pw-sam_support"},
        REMOTE_ADDR="10.1.2.3",
    )
    assert response.status_code == 302


@pytest.mark.django_db
def test_it_shows_a_labelled_sign_in_form(client):
    response = client.get(reverse("login"))
    assert b'<label for="id_username">Username</label>' in response.content
    assert b'<label for="id_password">Password</label>' in response.content


def test_it_sends_a_superuser_without_a_staff_role_to_the_django_admin(client, django_user_model):
    django_user_model.objects.create_superuser("root_admin", password="pw-root-admin-1")
    response = client.post(
        reverse("login"), {"username": "root_admin", "password": "pw-root-admin-1"}
    )
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")
