"""Turns audit actions into sentences for the history page (pretix's logdisplay, in small).

An action not listed here is shown as its name, so a new action never breaks the page.
"""

SENTENCES = {
    "snapshot.imported": "imported a snapshot",
    "tournament.imported": "imported a snapshot",
    "incident.recorded": "recorded the incident",
    "incident.restart_attempted": "logged a restart attempt",
    "incident.restart_logged": "logged a restart attempt",
    "incident.resumed": "marked play resumed",
    "incident.not_resumable": "declared the tournament not resumable",
    "incident.declared_not_resumable": "declared the tournament not resumable",
    "incident.cancelled": "cancelled the tournament",
    "incident.cancelled_after_window": "cancelled the tournament after the 30-minute window",
    "incident.site_wide_confirmed": "confirmed a site-wide issue",
    "incident.site_wide_issue_confirmed": "confirmed a site-wide issue",
    "incident.overdue": "flagged the incident as overdue",
    "proposal.prepared": "prepared a proposal",
    "proposal.submitted": "submitted the proposal",
    "proposal.approved": "approved the proposal",
    "proposal.rejected": "rejected the proposal",
    "proposal.posting_scheduled": "scheduled the posting",
    "posting.scheduled": "scheduled the posting",
    "posting.started": "started posting credits",
    "posting.posted": "finished posting credits",
    "proposal.posted": "finished posting credits",
    "posting.failed": "posting failed",
    "proposal.posting_failed": "posting failed",
    "posting.resumed": "resumed posting",
}


def describe(event):
    """ "maria_manager approved the proposal" style sentence for one AuditEvent."""
    what = SENTENCES.get(event.action, event.action)
    return f"{event.actor_name} {what}"
