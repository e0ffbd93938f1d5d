"""Persona fixtures and the rules for tests that need real services.

Tests marked `postgres`, `redis` or `browser` skip with a message when the service is missing,
and fail instead when REQUIRE_SERVICES=1 (CI), so a green CI always means they ran.
"""

import os
import shutil

import pytest
from django.conf import settings

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


def _user(django_user_model, username, role):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password="pw-" + username)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def support(db, django_user_model):
    return _user(django_user_model, "sam_support", "support")


@pytest.fixture
def manager(db, django_user_model):
    return _user(django_user_model, "maria_manager", "manager")


@pytest.fixture
def other_manager(db, django_user_model):
    return _user(django_user_model, "otto_manager", "manager")


@pytest.fixture
def auditor(db, django_user_model):
    return _user(django_user_model, "ada_auditor", "auditor")


@pytest.fixture
def outsider(db, django_user_model):
    """A logged-in account with no role at all."""
    return _user(django_user_model, "nora_norole", None)
