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

    base = {"DEBUG": "0", "PATH": "/usr/bin:/bin", "SECRET_KEY": "k" * 50, "ALLOWED_HOSTS": "x"}
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


def test_it_starts_in_production_with_a_declared_wallet():
    assert _start_in_production(WALLET="ledger")[0] == 0
    cashier = {"WALLET": "cashier", "CASHIER_URL": "http://c", "CASHIER_TOKEN": "t"}
    assert _start_in_production(**cashier)[0] == 0
