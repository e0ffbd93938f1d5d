"""The password-reset e-mail, sent by a worker: the web request that asks for it only queues
this task, with the same work for an address that has an account and one that has none."""

import logging

from celery import shared_task
from django.contrib.auth.forms import PasswordResetForm

log = logging.getLogger(__name__)


@shared_task(name="accounts.send_password_reset", acks_late=True)
def send_password_reset(email, *, domain, use_https):
    """E-mail a reset link to the active accounts with this address (none: nothing sent)."""
    form = PasswordResetForm({"email": email})
    if form.is_valid():
        form.save(domain_override=domain, use_https=use_https)
