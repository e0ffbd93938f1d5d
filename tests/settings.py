"""The test suite's settings: the app's own (refunds_admin/settings.py) with DEBUG on unless the
environment says otherwise, as `make run` has it (DEBUG is off by default, for production).
pytest-django still runs each test with settings.DEBUG False; worker processes the tests start
inherit DEBUG=1 from this process's environment."""

import os

os.environ.setdefault("DEBUG", "1")

from refunds_admin.settings import *  # noqa: E402, F403
