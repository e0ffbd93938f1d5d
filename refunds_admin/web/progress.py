"""The posting job's progress as the pages show it, read from ledger.selectors."""

from refunds_admin.ledger import selectors as ledger_selectors


def progress_of(proposal):
    """posting_progress() plus the percentage the progress bar draws."""
    progress = dict(ledger_selectors.posting_progress(proposal))
    total = progress.get("total") or 0
    posted = progress.get("posted") or 0
    progress["percent"] = (
        100
        if total == 0 and progress.get("state") == "posted"
        else ((posted * 100 // total) if total else 0)
    )
    progress["done"] = progress.get("state") in ("posted", "failed")
    # By form, once something is booked: cash, tournament money, tickets (and, with the cashier
    # as the wallet, how many it confirmed or refused, with its reason for a human).
    progress["cashier"] = proposal.wallet == "cashier"
    progress["by_method"] = ledger_selectors.credits_by_method(proposal.pk) if total else []
    progress["refused"] = (
        ledger_selectors.refused_credits(proposal.pk)
        if progress["by_method"] and any(row["refused"] for row in progress["by_method"])
        else []
    )
    return progress
