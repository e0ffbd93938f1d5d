"""One settings module, driven by environment variables (see README "Settings").

SQLite and in-process tasks by default; DATABASE_URL / REDIS_URL switch to PostgreSQL and a
real Celery worker on Redis. Helpers fail loudly on values they cannot read.
"""

from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

# The environment's readers (refunds_admin/env.py), shared with gunicorn.conf.py.
from refunds_admin.env import env, env_bool, env_float, env_int, env_list, env_number  # noqa: F401

BASE_DIR = Path(__file__).resolve().parent.parent

# Off unless asked for: a worker, beat or manage.py started with the production environment must
# never run with the debug page (which shows the settings) or skip the production checks below.
# `make run` and the test suite (tests/support/settings.py) turn it on.
DEBUG = env_bool("DEBUG", default=False)
SECRET_KEY = env("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off: set it to a long random string, e.g. "
            "SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

# The audit chain's key (audit/chain.py): each event's hash is an HMAC under it, and the database
# never holds it, so its credentials alone cannot append an event that fits the chain. Set it
# once and keep it (every event's hash depends on it); its own variable, so that rotating
# SECRET_KEY leaves it alone. Unset, it is derived from SECRET_KEY.
AUDIT_CHAIN_KEY = env("AUDIT_CHAIN_KEY") or f"audit-chain:{SECRET_KEY}"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")
if not DEBUG and not ALLOWED_HOSTS:
    # Without it every request would be refused with "400 Bad Request": say so at start-up.
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS is required when DEBUG is off: the comma-separated host names the "
        "site is served under, e.g. ALLOWED_HOSTS=refunds.example.com"
    )
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
CSRF_FAILURE_VIEW = "refunds_admin.web.views.errors.csrf_failure"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "refunds_admin.accounts",
    "refunds_admin.audit",
    "refunds_admin.ops",
    "refunds_admin.policies",
    "refunds_admin.tournaments",
    "refunds_admin.incidents",
    "refunds_admin.outages",
    "refunds_admin.proposals",
    "refunds_admin.ledger",
    "refunds_admin.notifications",
    "refunds_admin.reports",
    "refunds_admin.web",
]

# How many reverse proxies of ours stand in front of the app, each appending to X-Forwarded-For
# (0: none, REMOTE_ADDR is the client). Never more than there really are: a higher number lets a
# client choose its own address and dodge the sign-in lockout.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

MIDDLEWARE = [
    # The client's address, before anything logs or counts it (ops.middleware).
    "refunds_admin.ops.middleware.ClientAddressMiddleware",
    # First: every request (static files, redirects and health checks too) gets its request id
    # and one log line.
    "refunds_admin.audit.middleware.RequestContextMiddleware",
    "refunds_admin.ops.middleware.RequestLogMiddleware",
    # Before the HTTPS redirect and the host check: a load balancer probes plain HTTP by address.
    "refunds_admin.ops.middleware.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "refunds_admin.web.timezones.StaffTimezoneMiddleware",
    # Last: turns a sign-in refused by the lockout policy into the 429 page.
    "axes.middleware.AxesMiddleware",
]

# Sign-in: the lockout policy first (refunds_admin/accounts/signin.py), then the password.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "refunds_admin.urls"
WSGI_APPLICATION = "refunds_admin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "refunds_admin.web.context_processors.staff",
            ],
        },
    },
]

DATABASE_URL = env("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # A database host that drops packets (rather than refusing) must not hold a request, or
        # /healthz, for the operating system's connect timeout of minutes: give up after a few
        # seconds, so the load balancer hears 503 in time.
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
            "connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=1)
        )
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
USE_I18N = True
USE_TZ = True  # storage is always UTC
TIME_ZONE = env("TIME_ZONE", "UTC")  # default display time zone for staff

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env("STATIC_ROOT", str(BASE_DIR / "staticfiles"))
# Production (DEBUG=0, `make serve`): collectstatic writes content-hashed names plus gzip copies,
# and whitenoise serves them with a year-long, immutable Cache-Control (and the compressed copy
# to browsers that accept it). Debugging serves the files from static/ as they are.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# Content-Security-Policy (django-csp 4): nothing inline, nothing from elsewhere. Pages keep
# their scripts in static/js and their styles in static/css; htmx is told not to inject its
# indicator <style> (meta htmx-config in base.html).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

LOGIN_URL = "login"
LOGIN_URL_PATH = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# Uploaded snapshots of 100k+ entries are tens of MB; a document may be 100 MB at most
# (payouts.snapshot.MAX_DOCUMENT_BYTES, docs/snapshot-limits.md), plus room for the form fields.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 101 * 1024 * 1024, minimum=1)
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("FILE_UPLOAD_MAX_MEMORY_SIZE", 50 * 1024 * 1024, minimum=1)

# One lockout policy (django-axes) for the sign-in page, the admin's sign-in and the approval's
# re-authentication: AXES_FAILURE_LIMIT failures for one (normalised username, address) pair lock
# that pair out for AXES_COOLOFF_TIME. Counted in the database, so every web process agrees.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_USERNAME_CALLABLE = "refunds_admin.accounts.signin.username_for_lockout"
AXES_CLIENT_IP_CALLABLE = "refunds_admin.accounts.signin.client_address"
AXES_LOCKOUT_CALLABLE = "refunds_admin.accounts.signin.lockout_response"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# Two-factor (TOTP, django-otp) for managers and superusers: docs/security.md.
OTP_TOTP_ISSUER = env("OTP_TOTP_ISSUER", "refunds_admin")
# A code is accepted within one 30-second step either side of the server's clock; the window
# does not follow a drifting phone (keeps "which codes are valid now" simple and predictable).
OTP_TOTP_SYNC = False
# The admin shows no key or QR code of anyone's authenticator (and accounts/admin.py lets it
# neither add nor edit devices): a superuser must not be able to become a manager.
OTP_ADMIN_HIDE_SENSITIVE_DATA = True

# The cache: shared through Redis when there is one, so every web process sees the same;
# per process otherwise.
if env("REDIS_URL"):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": env("REDIS_URL"),
            "KEY_PREFIX": "refunds_admin",
        }
    }

# Celery: a real worker on Redis when REDIS_URL is set, otherwise tasks run in-process.
REDIS_URL = env("REDIS_URL")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# A broker that is down must not hang an approval: fail fast, the outbox sweeper re-queues.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "max_retries": 0,
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
    "visibility_timeout": 3600,
}
CELERY_TASK_PUBLISH_RETRY = False
# An outage's batch prepare job without a heartbeat for this long (it beats every fifth of it,
# from a thread, even inside one long tournament) is stalled: its worker was killed. The sweeper
# queues it again and whoever claims it continues it.
OUTAGE_PREPARE_STALE_AFTER = env_int("OUTAGE_PREPARE_STALE_AFTER", 60)
# How many parts an outage's batch prepare is split into, for that many worker processes at once.
OUTAGE_PREPARE_PARTS = env_int("OUTAGE_PREPARE_PARTS", 2, minimum=1)
# Periodic and short tasks (sweepers, staff e-mails, heartbeats) go to their own queue, served by
# a worker of its own (`celery worker -Q periodic`, README "Deploying"): a sweep never waits
# behind long postings. Long jobs (posting, statements, batch prepare) stay on "celery".
CELERY_TASK_DEFAULT_QUEUE = "celery"
PERIODIC_TASKS = (
    "ledger.sweep_unposted",
    "incidents.flag_overdue",
    "notifications.sweep",
    "notifications.dispatch_events",
    "proposals.sweep_prepare",
    "ops.heartbeat",
    "web.snapshot_changes",  # a re-import's differences for the incident page, 0.1 s for 100k
)
CELERY_TASK_ROUTES = {name: {"queue": "periodic"} for name in PERIODIC_TASKS}
# Each sweep runs one at a time (an advisory lock) and expires unless started before the next
# one is due, so sweeps held up behind a busy worker never run back to back.
SWEEP_EVERY = float(env_int("SWEEP_EVERY", 60, minimum=1))
_sweep = {"schedule": SWEEP_EVERY, "options": {"expires": SWEEP_EVERY * 0.9}}
HEARTBEAT_EVERY = float(env_int("HEARTBEAT_EVERY", 30, minimum=1))
CELERY_BEAT_SCHEDULE = {
    "sweep-unposted-proposals": {"task": "ledger.sweep_unposted", **_sweep},
    "sweep-prepare-runs": {"task": "proposals.sweep_prepare", **_sweep},
    "flag-overdue-incidents": {"task": "incidents.flag_overdue", **_sweep},
    # Staff e-mails and player statements missed by the after-commit kick; stuck postings.
    "notifications-sweep": {"task": "notifications.sweep", **_sweep},
    # /healthz shows when beat last sent this and when a worker last finished a task, for each
    # queue: one heartbeat per queue, so that a dead worker of the long jobs' queue does not
    # hide behind a live periodic one.
    "heartbeat": {
        "task": "ops.heartbeat",
        "schedule": HEARTBEAT_EVERY,
        "options": {"expires": HEARTBEAT_EVERY},
    },
    "heartbeat-long-jobs": {
        "task": "ops.heartbeat",
        "schedule": HEARTBEAT_EVERY,
        "options": {"expires": HEARTBEAT_EVERY, "queue": "celery"},
    },
}

# Posting (refunds_admin/ledger, docs/posting.md): lines per chunk (one transaction each),
# seconds without progress before the sweeper re-queues a job, runs that may end in an error
# before the job fails and waits for a manager.
POSTING_CHUNK_SIZE = env_int("POSTING_CHUNK_SIZE", 10_000, minimum=1)
POSTING_STALE_AFTER = env_int("POSTING_STALE_AFTER", 120)
POSTING_MAX_ATTEMPTS = env_int("POSTING_MAX_ATTEMPTS", 5, minimum=1)  # real errors only
# The wallet being unavailable (cashier down or throttling, database or broker unreachable, a
# worker killed) never uses up attempts: the job waits, backing off from POSTING_BACKOFF_BASE
# seconds, doubled each time up to POSTING_BACKOFF_MAX, for at most POSTING_UNAVAILABLE_BUDGET
# seconds; then it fails and the managers are e-mailed. The setting's former name,
# POSTING_OUTAGE_BUDGET, is still read so that existing environments keep their budget.
POSTING_UNAVAILABLE_BUDGET = env_int(
    "POSTING_UNAVAILABLE_BUDGET", env_int("POSTING_OUTAGE_BUDGET", 2 * 3600)
)
POSTING_BACKOFF_BASE = env_float("POSTING_BACKOFF_BASE", 5.0)
POSTING_BACKOFF_MAX = env_float("POSTING_BACKOFF_MAX", 300.0)

# The operator's cashier (../shared/spec/cashier-api.md). Unset: the app's own ledger is the wallet.
CASHIER_URL = env("CASHIER_URL", "")
CASHIER_TOKEN = env("CASHIER_TOKEN", "")
CASHIER_TIMEOUT = env_float("CASHIER_TIMEOUT", 10.0, minimum=0.001)
CASHIER_MAX_TRIES = env_int(
    "CASHIER_MAX_TRIES", 8, minimum=1
)  # per credit, before the job retries later
CASHIER_BACKOFF = env_float("CASHIER_BACKOFF", 0.5)  # seconds, doubled on each try
CASHIER_CONCURRENCY = env_int(
    "CASHIER_CONCURRENCY", 16, minimum=1
)  # requests in flight (keep-alive)
CASHIER_BATCH = env_int("CASHIER_BATCH", 2000, minimum=1)  # credits read and sent per batch

# The wallet approvals pay into is recorded at approval from CASHIER_URL (docs/posting.md). In
# production it must also be declared, so that a web process or worker that lost CASHIER_URL from
# its environment refuses to start instead of approving payouts into the app's own ledger, where
# they would be "posted" without ever reaching a player.
WALLET = env("WALLET", "")
if WALLET not in ("", "cashier", "ledger"):
    raise ImproperlyConfigured(f"WALLET must be 'cashier' or 'ledger', not {WALLET!r}")
if not WALLET and not DEBUG:
    raise ImproperlyConfigured(
        "WALLET is required when DEBUG is off: 'cashier' (with CASHIER_URL and CASHIER_TOKEN) "
        "to pay players through the operator's cashier, or 'ledger' for the app's own ledger only"
    )
if WALLET == "cashier" and not (CASHIER_URL and CASHIER_TOKEN):
    raise ImproperlyConfigured(
        "WALLET=cashier needs CASHIER_URL and CASHIER_TOKEN: without them this process would "
        "approve payouts into the app's own ledger instead of the cashier"
    )
if WALLET == "ledger" and CASHIER_URL:
    raise ImproperlyConfigured(
        "WALLET=ledger but CASHIER_URL is set: say WALLET=cashier, or unset CASHIER_URL"
    )

# E-mail carries password-reset links and players' statements (addresses, amounts): in
# production it goes to a real mail server, never to the console, which would print it into the
# logs past their masking. With DEBUG off EMAIL_BACKEND must be set, like WALLET.
_CONSOLE_EMAIL = "django.core.mail.backends.console.EmailBackend"
EMAIL_BACKEND = env("EMAIL_BACKEND", _CONSOLE_EMAIL if DEBUG else "")
if not DEBUG and EMAIL_BACKEND in ("", _CONSOLE_EMAIL):
    raise ImproperlyConfigured(
        "EMAIL_BACKEND is required when DEBUG is off, and not the console (it would print "
        "password-reset links and players' statements into the logs): e.g. "
        "EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend with EMAIL_HOST, EMAIL_PORT, "
        "EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS"
    )
EMAIL_HOST = env("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
# For the file-based backend (`make run` writes every e-mail under mail/).
EMAIL_FILE_PATH = env("EMAIL_FILE_PATH", str(BASE_DIR / "mail"))
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "refunds-admin@localhost")
# Password-reset requests per client address and per e-mail address per hour (web/views/account).
PASSWORD_RESET_LIMIT = env_int("PASSWORD_RESET_LIMIT", 5, minimum=1)
# Every answer to a reset request takes at least this long, known address or not.
PASSWORD_RESET_MIN_SECONDS = env_float("PASSWORD_RESET_MIN_SECONDS", 1.0)

# Player statements after posting (docs/notifications.md). STATEMENT_CHANNEL picks the adapter:
# "webhook" (the operator's messaging webhook, keyed by player id) or "email" (Django's e-mail
# backend, for entries whose snapshot carries `email`). Default: webhook when NOTIFY_URL is set.
NOTIFY_URL = env("NOTIFY_URL", "")
NOTIFY_TOKEN = env("NOTIFY_TOKEN", "")
NOTIFY_TIMEOUT = env_float("NOTIFY_TIMEOUT", 10.0, minimum=0.001)
NOTIFY_MAX_TRIES = env_int(
    "NOTIFY_MAX_TRIES", 8, minimum=1
)  # per message, before the job retries later
NOTIFY_BACKOFF = env_float("NOTIFY_BACKOFF", 0.5)  # seconds, doubled on each try
NOTIFY_CONCURRENCY = env_int(
    "NOTIFY_CONCURRENCY", 8, minimum=1
)  # messages in flight (keep-alive connections)
NOTIFY_BATCH_SIZE = env_int(
    "NOTIFY_BATCH_SIZE", 2000, minimum=1
)  # messages recorded per transaction
NOTIFY_MAX_ATTEMPTS = env_int(
    "NOTIFY_MAX_ATTEMPTS", 5, minimum=1
)  # job runs ending in an error, then failed
NOTIFY_STALE_AFTER = env_int("NOTIFY_STALE_AFTER", 120)  # seconds without heartbeat: re-queued
STATEMENT_CHANNEL = env("STATEMENT_CHANNEL", "webhook" if NOTIFY_URL else "email")
if STATEMENT_CHANNEL not in ("webhook", "email"):
    raise ImproperlyConfigured(
        f"STATEMENT_CHANNEL must be webhook or email, not {STATEMENT_CHANNEL!r}"
    )
if STATEMENT_CHANNEL == "webhook" and not NOTIFY_URL:
    raise ImproperlyConfigured("STATEMENT_CHANNEL=webhook needs NOTIFY_URL (and NOTIFY_TOKEN)")
# Links in staff e-mails point here.
SITE_URL = env("SITE_URL", "http://127.0.0.1:8000").rstrip("/")
# A posting job queued or without heartbeat this long is reported to the managers as stuck.
POSTING_STUCK_AFTER = env_int("POSTING_STUCK_AFTER", 15 * 60, minimum=1)

# Production hardening: on whenever DEBUG is off.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads it via hx-headers rendered server side; kept default
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600, minimum=60)
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # Behind the operator's TLS-terminating proxy: the request was HTTPS when the proxy says so
    # (X-Forwarded-Proto: https), so the SSL redirect does not loop. The proxy must set (and
    # overwrite) that header; TRUST_X_FORWARDED_PROTO=0 when the app terminates TLS itself.
    if env_bool("TRUST_X_FORWARDED_PROTO", True):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Operator logs (the audit table is for auditors). LOG_FORMAT=json: one JSON object per line with
# the request id, user id and the proposal/incident the request or task is about; secrets are
# masked in every line (refunds_admin/ops/logs.py).
LOG_FORMAT = env("LOG_FORMAT", "text")
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be text or json, not {LOG_FORMAT!r}")
LOG_LEVEL = env("LOG_LEVEL", "INFO")
# One line per request from the app (with user and object ids); gunicorn's access log has its own.
LOG_REQUESTS = env_bool("LOG_REQUESTS", LOG_FORMAT == "json")
# Celery's worker and beat log through this handler (its format and masking), not their own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"()": "refunds_admin.ops.logs.TextFormatter"},
        "json": {"()": "refunds_admin.ops.logs.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "filters": {"no_traceback_below_500": {"()": "refunds_admin.logfilters.NoTracebackBelow500"}},
    "loggers": {
        # A 403 or 404 is one line, not a traceback (refunds_admin/logfilters.py).
        "django.request": {"filters": ["no_traceback_below_500"]},
        # Django's own "django" logger has a console handler of its own: don't print twice.
        "django": {"handlers": [], "level": "INFO"},
        "django.db.backends": {"level": "WARNING"},
        # Every sign-in is logged at INFO by django-axes; lockouts are warnings (and audited).
        "axes": {"level": "WARNING"},
    },
}
