import pytest
from django.contrib.auth.models import Group


@pytest.mark.django_db
def test_it_creates_the_three_role_groups():
    assert set(Group.objects.values_list("name", flat=True)) >= {"support", "manager", "auditor"}


def test_it_refuses_to_start_without_secret_key_when_debug_is_off():
    import subprocess
    import sys

    env = {"DEBUG": "0", "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django,os;os.environ['DJANGO_SETTINGS_MODULE']='refunds_admin.settings';django.setup()",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode != 0
    assert "SECRET_KEY is required" in res.stderr


def _start_in_production(**env):
    """Start Django with DEBUG off (and a key and host) plus `env`; (exit code, stderr)."""
    import subprocess
    import sys

    base = {
        "DEBUG": "0",
        "PATH": "/usr/bin:/bin",
        "SECRET_KEY": "k" * 50,
        "ALLOWED_HOSTS": "x",
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
    }
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django,os;os.environ['DJANGO_SETTINGS_MODULE']='refunds_admin.settings';django.setup()",
        ],
        env={**base, **env},
        capture_output=True,
        text=True,
    )
    return res.returncode, res.stderr


@pytest.mark.parametrize(
    "env, why",
    [
        # A process that lost CASHIER_URL would approve payouts into the app's own ledger.
        ({}, "WALLET is required when DEBUG is off"),
        ({"WALLET": "cashier"}, "WALLET=cashier needs CASHIER_URL and CASHIER_TOKEN"),
        ({"WALLET": "cashier", "CASHIER_URL": "http://c"}, "needs CASHIER_URL and CASHIER_TOKEN"),
        ({"WALLET": "ledger", "CASHIER_URL": "http://c"}, "WALLET=ledger but CASHIER_URL is set"),
        ({"WALLET": "bank"}, "WALLET must be 'cashier' or 'ledger'"),
    ],
)
def test_it_refuses_to_start_in_production_without_a_declared_wallet(env, why):
    code, stderr = _start_in_production(**env)
    assert code != 0
    assert why in stderr


def _debug_without(*names):
    """settings.DEBUG of a process started with the production environment minus `names`."""
    import subprocess
    import sys

    base = {
        "PATH": "/usr/bin:/bin",
        "SECRET_KEY": "k" * 50,
        "ALLOWED_HOSTS": "x",
        "WALLET": "ledger",
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
    }
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django,os;os.environ['DJANGO_SETTINGS_MODULE']='refunds_admin.settings';"
            "django.setup();from django.conf import settings;print(settings.DEBUG)",
        ],
        env={k: v for k, v in base.items() if k not in names},
        capture_output=True,
        text=True,
    )
    return res.returncode, res.stdout.strip(), res.stderr


def test_debug_is_off_unless_asked_for():
    """A worker, beat or manage.py started with the README's production environment (no DEBUG
    in it) runs with DEBUG off, and so with the production checks."""
    assert _debug_without()[:2] == (0, "False")
    code, _, stderr = _debug_without("WALLET")
    assert code != 0 and "WALLET is required when DEBUG is off" in stderr


@pytest.mark.parametrize(
    "backend", [None, "django.core.mail.backends.console.EmailBackend"], ids=["unset", "console"]
)
def test_it_refuses_to_start_in_production_without_a_real_email_backend(backend):
    env = {"WALLET": "ledger", "EMAIL_BACKEND": backend or ""}
    code, stderr = _start_in_production(**env)
    assert code != 0 and "EMAIL_BACKEND is required when DEBUG is off" in stderr


def test_it_starts_in_production_with_a_declared_wallet():
    assert _start_in_production(WALLET="ledger")[0] == 0
    cashier = {"WALLET": "cashier", "CASHIER_URL": "http://c", "CASHIER_TOKEN": "t"}
    assert _start_in_production(**cashier)[0] == 0
