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
    return progress
