"""gunicorn settings for `make serve` (read from the environment, like settings.py).

HOST/PORT: where to listen (behind the operator's TLS proxy); WEB_CONCURRENCY: worker
processes, by default 2 x CPUs + 1; GUNICORN_THREADS: threads per worker (gthread); LOG_FORMAT=json: the access and error logs as JSON lines.
"""

import os

from refunds_admin.env import env_int
from refunds_admin.ops.logs import gunicorn_logconfig


def _cpus():
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may use (containers)
    except AttributeError:
        return os.cpu_count() or 1


wsgi_app = "refunds_admin.wsgi:application"
# Every number through env_int: WEB_CONCURRENCY=four stops the start-up naming the variable.
bind = [f"{os.environ.get('HOST', '127.0.0.1')}:{env_int('PORT', 8000, minimum=1, maximum=65535)}"]
workers = env_int("WEB_CONCURRENCY", 2 * _cpus() + 1, minimum=1)
# Threads, not one sync request per process: a client that sends its headers slowly holds one
# thread, not a whole worker, so a few slow (or malicious) clients cannot stall /healthz and
# everyone else. In production a buffering proxy (nginx, the load balancer) sits in front and
# hands gunicorn only complete requests (README "Deploying").
worker_class = "gthread"
threads = env_int("GUNICORN_THREADS", 8, minimum=1)
# An idle keep-alive connection is closed after this many seconds (frees its thread).
keepalive = env_int("GUNICORN_KEEPALIVE", 5)
# Snapshot uploads of 100k entries take a while to import: do not kill the worker under them.
timeout = env_int("GUNICORN_TIMEOUT", 120, minimum=1)
graceful_timeout = 30
proc_name = "refunds_admin"
# No gunicornc control socket: its default path is one per user, so two servers on one machine
# would fight over it, and nothing here uses it.
control_socket_disable = True

accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s" request_id=%({x-request-id}o)s'
logconfig_dict = gunicorn_logconfig(
    os.environ.get("LOG_FORMAT", "text"), os.environ.get("LOG_LEVEL", "INFO")
)
