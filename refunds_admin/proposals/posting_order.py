"""The posting order an approval writes, and the wallet configuration it is checked against.

Layering (docs/posting.md, "Who owns what"): the proposals layer records the decision to pay
(wallet + identity, in the approval's transaction) and queues the ledger's task *by name* after
commit; the ledger, one layer up, creates and claims its PostingJob from that order. Neither
imports the other's services: proposals never import the ledger, the ledger reads this module.
"""

import logging

from django.conf import settings

log = logging.getLogger(__name__)

LEDGER = "ledger"
CASHIER = "cashier"
POSTING_TASK = "ledger.post_proposal"


def configured_wallet() -> tuple[str, str]:
    """(wallet, identity) this process is configured for: the cashier at CASHIER_URL (without a
    trailing slash), or the app's own ledger when CASHIER_URL is unset."""
    url = (getattr(settings, "CASHIER_URL", "") or "").strip().rstrip("/")
    return (CASHIER, url) if url else (LEDGER, "")


def describe_wallet(wallet: str, identity: str) -> str:
    if wallet == CASHIER:
        return f"the cashier at {identity}"
    if wallet == LEDGER:
        return "the app's own ledger (no cashier)"
    return "no wallet recorded"


def queue_posting(proposal_id: int) -> bool:
    """Queue the ledger's posting task by name (after the approval committed). Never raises:
    with the broker down the approved proposal waits and the ledger's sweeper queues it."""
    from refunds_admin.celery import app

    try:
        app.tasks[POSTING_TASK].delay(proposal_id)
        return True
    except Exception:
        log.warning(
            "could not queue the posting of proposal %s; the sweeper will retry",
            proposal_id,
            exc_info=True,
        )
        return False
