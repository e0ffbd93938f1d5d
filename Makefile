# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml | cksum | cut -d' ' -f1)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run serve test test-a-year-ahead bench lint format check-examples screenshots clean

$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

# Serves the app with demo data. SQLite and in-process tasks unless DATABASE_URL / REDIS_URL are set.
# Development: DEBUG on (it is off unless set).
run: export DEBUG ?= 1
# Links in staff e-mails point at the port served here; every e-mail (player statements, staff
# notices) is written as a file under MAIL_DIR rather than printed among the server's lines.
MAIL_DIR ?= $(CURDIR)/mail
run: export SITE_URL ?= http://$(HOST):$(PORT)
run: export EMAIL_BACKEND ?= django.core.mail.backends.filebased.EmailBackend
run: export EMAIL_FILE_PATH ?= $(MAIL_DIR)
run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	@echo "E-mails (player statements, staff notices) are written as files to $(EMAIL_FILE_PATH)/"
	@echo "Links in them point to $(SITE_URL)"
	$(PY) manage.py runserver $(HOST):$(PORT)

# The production web process: gunicorn (gunicorn.conf.py) with DEBUG=0 and the same environment
# settings, after migrations and collectstatic (hashed, compressed files served by whitenoise).
# Needs SECRET_KEY and ALLOWED_HOSTS; see README "Deploying". With MIGRATE_DATABASE_URL (the
# tables' owner) set, migrations run as the owner and the app's role (DATABASE_URL) is granted
# its rights; the app itself never connects as the owner. Run the Celery worker and beat beside it.
serve: export DEBUG = 0
serve: install
	@test -n "$$SECRET_KEY" || { echo "make serve: set SECRET_KEY (a long random string) first" >&2; exit 2; }
	@test -n "$$ALLOWED_HOSTS" || { echo "make serve: set ALLOWED_HOSTS (the site's host names, comma-separated) first" >&2; exit 2; }
	@if [ -n "$$MIGRATE_DATABASE_URL" ]; then \
		app_role="$$($(PY) -c 'import os, dj_database_url; print(dj_database_url.parse(os.environ["DATABASE_URL"])["USER"])')" && \
		DATABASE_URL="$$MIGRATE_DATABASE_URL" $(PY) manage.py migrate --noinput && \
		DATABASE_URL="$$MIGRATE_DATABASE_URL" $(PY) manage.py grant_app_role "$$app_role"; \
	else \
		$(PY) manage.py migrate --noinput; \
	fi
	$(PY) manage.py collectstatic --noinput --verbosity 0
	HOST=$(HOST) PORT=$(PORT) exec $(VENV)/bin/gunicorn --config gunicorn.conf.py

# The whole suite. With DATABASE_URL and REDIS_URL set it runs against PostgreSQL and a real
# Celery worker on Redis; REQUIRE_SERVICES=1 turns a missing service or browser into a failure.
# Coverage is measured on the way; tools/coverage_floors.py then fails the run when
# refunds_admin/payouts/ is below 95% or any services.py below 90%, and prints the figures.
# The 25 slowest tests are listed at the end, to keep CI inside its 90 minutes.
test: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(PY) -m pytest --cov --cov-report= --durations=25 $(PYTEST_ARGS)
	$(PY) tools/coverage_floors.py

# The SQLite part of the suite with the clock moved a year ahead (libfaketime, Debian's
# `faketime`): no test may depend on today's date. Services and the browser are left out (the
# PostgreSQL server and chromium keep the real clock).
test-a-year-ahead: install
	env -u DATABASE_URL -u REDIS_URL -u REQUIRE_SERVICES faketime -f '+400d' \
		$(PY) -m pytest -p no:cacheprovider -q --ignore=tests/browser -m "not browser" --durations=15 $(PYTEST_ARGS)

# Refresh docs/screenshots/ from the browser journeys (needs DATABASE_URL and REDIS_URL, so
# that the posting job shows progress).
screenshots: install
	UPDATE_SCREENSHOTS=1 $(PY) -m pytest tests/browser

bench: export DEBUG ?= 1
bench: install
	$(PY) bench/run.py $(BENCH_ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

format: install
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

check-examples: install
	$(PY) ../shared/tools/check-examples .

clean:
	rm -rf $(VENV) db.sqlite3 .coverage
