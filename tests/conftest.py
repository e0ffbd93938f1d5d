"""Persona fixtures and the rules for tests that need real services.

Tests marked `postgres`, `redis` or `browser` skip with a message when the service is missing,
and fail instead when REQUIRE_SERVICES=1 (CI), so a green CI always means they ran.
"""

import os
import shutil

import pytest
from django.conf import settings
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# Real Celery worker processes for tests (posting, and the browser journeys).
from tests.support.posting_support import celery_worker_process  # noqa: F401

# Hypothesis: few examples by default, for quick loops while working; CI exports
# HYPOTHESIS_PROFILE=ci for a thorough search. Tests leave the number of examples to the profile.
hypothesis_settings.register_profile(
    "fast", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.register_profile(
    "ci",
    max_examples=500,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def _missing(item):
    if item.get_closest_marker("postgres") and settings.DATABASES["default"]["ENGINE"] != (
        "django.db.backends.postgresql"
    ):
        return "PostgreSQL (set DATABASE_URL)"
    if item.get_closest_marker("redis") and not os.environ.get("REDIS_URL"):
        return "Redis (set REDIS_URL)"
    if item.get_closest_marker("browser") and not (
        os.path.exists(CHROMIUM) or shutil.which("chromium")
    ):
        return f"Chromium ({CHROMIUM}; apt-get install chromium)"
    return None


def pytest_runtest_setup(item):
    missing = _missing(item)
    if missing:
        if REQUIRE_SERVICES:
            pytest.fail(f"REQUIRE_SERVICES=1 but this test needs {missing}", pytrace=False)
        pytest.skip(f"needs {missing}")


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher():
    """Every test creates persona users, and the default hasher costs most of a second each: a
    fast one for the whole run (the live server thread of the browser tests shares it; worker
    subprocesses never check a password)."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


def _user(django_user_model, username, role):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password="pw-" + username)
    if role:
        # get_or_create: after a transactional test the flush also empties the groups that the
        # accounts data migration created.
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture(autouse=True)
def _signed_in_with_both_factors(monkeypatch):
    """`client.force_login(user)` stands for a completed sign-in: for a manager or superuser
    with an authenticator, that is the password and then a code, so the session is verified
    (django-otp) as the sign-in page leaves it. `password_only_login(client, user)` is the
    half-finished sign-in that money decisions refuse."""
    from django.test.client import ClientMixin

    original = ClientMixin.force_login

    def force_login(self, user, backend=None):
        original(self, user, backend)
        from django_otp import DEVICE_ID_SESSION_KEY

        from refunds_admin.accounts import mfa

        device = mfa.confirmed_device(user)
        if device is not None:
            session = self.session
            session[DEVICE_ID_SESSION_KEY] = device.persistent_id
            session.save()

    monkeypatch.setattr(ClientMixin, "force_login", force_login)
    monkeypatch.setattr(ClientMixin, "password_only_login", original, raising=False)


def password_only_login(client, user):
    """Signed in with the password alone: the second step (the code) not done."""
    client.password_only_login(user)
    return client


@pytest.fixture
def support(db, django_user_model):
    return _user(django_user_model, "sam_support", "support")


def _enrolled(user):
    """Managers sign decisions with a second factor: the personas have their app enrolled."""
    from tests.support.factories import enrol_device

    enrol_device(user)
    return user


@pytest.fixture
def manager(db, django_user_model):
    return _enrolled(_user(django_user_model, "maria_manager", "manager"))


@pytest.fixture
def other_manager(db, django_user_model):
    return _enrolled(_user(django_user_model, "otto_manager", "manager"))


@pytest.fixture
def auditor(db, django_user_model):
    return _user(django_user_model, "ada_auditor", "auditor")


@pytest.fixture
def outsider(db, django_user_model):
    """A logged-in account with no role at all."""
    return _user(django_user_model, "nora_norole", None)


@pytest.fixture(autouse=True)
def _append_only_tables_let_the_test_database_be_emptied(request):
    """After a transactional test pytest-django empties the tables with TRUNCATE, which the
    append-only triggers (audit events, ledger credits) refuse. For that flush only, this test
    connection skips triggers (session_replication_role = replica); every test using the
    database switches them back on first, so append-only stays enforced while tests run."""
    names = set(request.fixturenames)
    marker = request.node.get_closest_marker("django_db")
    uses_db = {"db", "transactional_db", "live_server"} & names or marker
    if not uses_db or settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        yield
        return
    from django.db import connection

    transactional = {"transactional_db", "live_server"} & names or (
        marker and marker.kwargs.get("transaction")
    )
    request.getfixturevalue("transactional_db" if transactional else "db")

    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = DEFAULT")
    yield
    if getattr(connection, "in_atomic_block", False):
        return  # a `db` test: rolled back, no flush
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")


@pytest.fixture
def superuser(db, django_user_model):
    """A superuser (user and role management in the Django admin), authenticator enrolled."""
    return _enrolled(django_user_model.objects.create_superuser("root", password="pw-root"))


@pytest.fixture
def admin_client(client, superuser):
    """A client signed in to the Django admin through its own sign-in form: password and a
    current code from the superuser's authenticator (OTPAdminSite)."""
    from tests.support.factories import totp_code

    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": "root", "password": "pw-root", "otp_token": totp_code(superuser)},
    )
    assert response.status_code == 302, response.content[:3000]
    return client
