"""The real web server in a test: started as an operator starts it (`make serve`, gunicorn with
gunicorn.conf.py), in its own process group on 127.0.0.1, with an operator's environment;
waited for until it answers, and stopped as a whole (its workers too) afterwards."""

import os
import secrets
import signal
import subprocess
import time

# The header a TLS-terminating proxy adds: the app (SECURE_PROXY_SSL_HEADER) then treats the
# request as HTTPS rather than redirecting it there.
HTTPS = {"X-Forwarded-Proto": "https"}


def production_env(**extra):
    """As an operator's environment: without the browser tests' DJANGO_ALLOW_ASYNC_UNSAFE (which
    check --deploy rightly refuses) or a DEBUG/HOST/PORT of the developer's (nor the test
    suite's settings module, which turns DEBUG on); `extra` on top, as strings."""
    unset = (
        "DEBUG", "HOST", "PORT", "DJANGO_ALLOW_ASYNC_UNSAFE", "CASHIER_URL", "CASHIER_TOKEN",
        "DJANGO_SETTINGS_MODULE",
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        WALLET="ledger",
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        PYTHONUNBUFFERED="1",
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start(command, *, cwd, env, log_path, answers, what, timeout):
    """Run `command` in a new process group, its output to `log_path`, and wait until
    `answers()` is true (an OSError counts as not yet). Fails with the log if the process exits
    first or `timeout` seconds pass."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited {proc.returncode}:\n{log_path.read_text()}")
        try:
            if answers():
                return proc
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop(proc)
            raise AssertionError(f"{what} did not answer:\n{log_path.read_text()}")
        time.sleep(0.3)


def stop(proc):
    """Stop the whole process group (make, gunicorn's master and its workers)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
