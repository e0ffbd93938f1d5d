from celery import shared_task


@shared_task(name="ops.heartbeat", ignore_result=True)
def heartbeat():
    """Beat sends this HEARTBEAT_EVERY seconds: beat stamps its send, the worker that
    runs it stamps its finish (refunds_admin/celery.py), and /healthz shows both ages."""
