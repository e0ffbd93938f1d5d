"""The one place that reads the environment's settings, for settings.py and gunicorn.conf.py:
a value that cannot be read stops the start-up with a message naming the variable and the
value, never a bare ValueError deep in a traceback."""

import math
import os

from django.core.exceptions import ImproperlyConfigured


def env(name, default=None):
    return os.environ.get(name, default)


def env_bool(name, default=False):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {raw!r}")


def env_number(name, default, *, whole=True, minimum=None, maximum=None):
    """The one reader of every numeric variable: unset or empty gives `default`; anything else
    must be a number (a whole one when `whole`) within the bounds, or start-up stops with an
    ImproperlyConfigured that names the variable, the value it was given and what it must be,
    instead of a bare ValueError from int() or float() deep in a traceback (or a negative
    timeout that only fails at the first request)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    what = "a whole number" if whole else "a number"
    if minimum is not None and maximum is not None:
        what += f" from {minimum} to {maximum}"
    elif minimum is not None:
        what += f" of at least {minimum}"
    elif maximum is not None:
        what += f" of at most {maximum}"
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}, not {raw!r}") from None
    if (
        not math.isfinite(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise ImproperlyConfigured(f"{name} must be {what}, not {raw!r}")
    return value


def env_int(name, default, *, minimum=0, maximum=None):
    """A whole number (a count, a size, seconds), not negative unless said otherwise."""
    return env_number(name, default, minimum=minimum, maximum=maximum)


def env_float(name, default, *, minimum=0.0, maximum=None):
    """A number of seconds or a fraction, not negative unless said otherwise."""
    return env_number(name, default, whole=False, minimum=minimum, maximum=maximum)


def env_list(name, default=""):
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]
