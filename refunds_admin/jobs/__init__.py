"""The job toolkit: what every background job of the app (posting, player statements, staff
e-mails, an outage's batch prepare) shares, written once (docs/jobs.md).

- `runtime`: whether tasks run in-process (no REDIS_URL) -- decided here and nowhere else --,
  queueing a task by name (now, or after the caller's transaction commits), retrying a task.
- `clock`: the database's clock. Heartbeats, claims and stale checks are stamped and compared
  on it, never on a worker's own clock (a worker 10 minutes off must not fool the sweeper).
- `locks`: one PostgreSQL advisory lock per job (held by one worker, released if it dies).
- `kinds`: a JobKind describes one job table (its states and stamps); it claims a job by
  compare-and-set, beats its heartbeat, finds the stale ones for its sweeper, tells the truthful
  state a page shows (queued, running, stalled-resuming, waiting for X since T, failed, done),
  and lists the stalled ones for /healthz.
- `heartbeat`: a heartbeat sent from a thread while a long step runs.
- `errors`: database errors classified by SQLSTATE (wait, retry at once, fail the attempt), and
  the capped exponential backoff.

Nothing here imports an app: the apps describe their jobs to it (layers, design.md).
"""
