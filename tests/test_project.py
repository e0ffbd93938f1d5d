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
