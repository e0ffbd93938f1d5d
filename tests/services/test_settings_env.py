"""Numeric settings fail loudly: a value that is not a number, or out of its bounds, stops the
start-up with a message naming the variable and the value (refunds_admin/settings.py,
env_number), never a bare ValueError from float() or a negative timeout found at the first
request. Each case imports the settings in a fresh interpreter, as a worker or `manage.py` does."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # where gunicorn.conf.py is, as make serve runs it

IMPORT_SETTINGS = (
    "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'refunds_admin.settings'; "
    "from django.conf import settings; "
    "print(repr(getattr(settings, os.environ['SHOW'])))"
)


def _import_settings(show, **env):
    """(exit code, stdout, stderr) of importing the settings with `env` on top of a plain
    development environment; prints the setting `show` when the import succeeds."""
    base = {"DEBUG": "1", "PATH": "/usr/bin:/bin", "SHOW": show}
    res = subprocess.run(
        [sys.executable, "-c", IMPORT_SETTINGS],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return res.returncode, res.stdout.strip(), res.stderr


@pytest.mark.parametrize(
    "name, value, message",
    [
        # The bare float(env(...)) of before: "ValueError: could not convert string to float".
        ("CASHIER_TIMEOUT", "10s", "CASHIER_TIMEOUT must be a number of at least 0.001, not '10s'"),
        ("CASHIER_TIMEOUT", "0", "CASHIER_TIMEOUT must be a number of at least 0.001, not '0'"),
        ("NOTIFY_BACKOFF", "-0.5", "NOTIFY_BACKOFF must be a number of at least 0.0, not '-0.5'"),
        ("NOTIFY_TIMEOUT", "nan", "NOTIFY_TIMEOUT must be a number of at least 0.001, not 'nan'"),
        ("POSTING_BACKOFF_MAX", "inf", "POSTING_BACKOFF_MAX must be a number of at least 0.0"),
        ("PASSWORD_RESET_MIN_SECONDS", "one", "PASSWORD_RESET_MIN_SECONDS must be a number"),
        # Whole numbers: a fraction, a word, a count that cannot be zero.
        ("CASHIER_CONCURRENCY", "0", "CASHIER_CONCURRENCY must be a whole number of at least 1"),
        ("POSTING_CHUNK_SIZE", "10k", "POSTING_CHUNK_SIZE must be a whole number of at least 1"),
        ("NOTIFY_MAX_TRIES", "2.5", "NOTIFY_MAX_TRIES must be a whole number of at least 1"),
        ("POSTING_STALE_AFTER", "-1", "POSTING_STALE_AFTER must be a whole number of at least 0"),
        ("EMAIL_PORT", "70000", "EMAIL_PORT must be a whole number from 1 to 65535, not '70000'"),
        ("SWEEP_EVERY", "0", "SWEEP_EVERY must be a whole number of at least 1, not '0'"),
        ("TRUSTED_PROXY_COUNT", "-2", "TRUSTED_PROXY_COUNT must be a whole number of at least 0"),
    ],
)
def test_a_bad_number_stops_the_start_naming_the_variable_and_the_value(name, value, message):
    code, _, stderr = _import_settings(name, **{name: value})
    assert code != 0
    assert "django.core.exceptions.ImproperlyConfigured: " + message in stderr
    assert "ValueError" not in stderr  # the cause is said once, in the domain's words


@pytest.mark.parametrize(
    "name, value, read",
    [
        ("CASHIER_TIMEOUT", "2.5", "2.5"),
        ("CASHIER_TIMEOUT", "", "10.0"),  # empty is unset: the default
        ("NOTIFY_BACKOFF", "0", "0.0"),  # no backoff is allowed
        ("CASHIER_CONCURRENCY", " 32 ", "32"),
        ("OUTAGE_PREPARE_STALE_AFTER", "0", "0"),
        ("SWEEP_EVERY", "5", "5.0"),
    ],
)
def test_a_good_number_is_read_as_given(name, value, read):
    code, stdout, stderr = _import_settings(name, **{name: value})
    assert code == 0, stderr
    assert stdout == read


@pytest.mark.parametrize(
    "name, value, message",
    [
        (
            "WEB_CONCURRENCY",
            "four",
            "WEB_CONCURRENCY must be a whole number of at least 1, not 'four'",
        ),
        ("GUNICORN_THREADS", "0", "GUNICORN_THREADS must be a whole number of at least 1, not '0'"),
        ("PORT", "80000", "PORT must be a whole number from 1 to 65535, not '80000'"),
    ],
)
def test_the_web_server_settings_name_the_variable_too(name, value, message):
    """gunicorn.conf.py reads its numbers through the same helper as settings.py."""
    res = subprocess.run(
        [sys.executable, "-c", "import runpy; runpy.run_path('gunicorn.conf.py')"],
        env={"PATH": "/usr/bin:/bin", name: value},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert res.returncode != 0
    assert message in res.stderr, res.stderr


def test_the_web_server_settings_take_good_numbers():
    code = "import runpy; c = runpy.run_path('gunicorn.conf.py'); print(c['threads'], c['bind'])"
    res = subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin", "GUNICORN_THREADS": "3", "PORT": "8123"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split(" ", 1) == ["3", "['127.0.0.1:8123']\n"]
