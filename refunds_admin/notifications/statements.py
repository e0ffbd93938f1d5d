"""A player's statement as sent: the engine's `explain` text for each of their credited entries
(the policy's own layout), in plain text and in HTML. Built the same way on every retry."""

from html import escape

from refunds_admin.payouts.money import display

SUBJECT = "Your refund for cancelled tournament {tournament}"


def plain_text(statements):
    """The entries' statements, one after the other (a re-entry has several)."""
    return "\n\n".join(statements) + "\n"


def html_of(statements, title):
    """The same lines as a small table per entry: label left, amount right."""
    parts = [
        "<!doctype html><html><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    for text in statements:
        parts.append('<table cellpadding="2">')
        for line in text.split("\n"):
            label, _, amount = line.partition("\t")
            if not label and not amount:
                parts.append('<tr><td colspan="2">&nbsp;</td></tr>')
            else:
                parts.append(
                    f'<tr><td>{escape(label)}</td><td align="right">{escape(amount)}</td></tr>'
                )
        parts.append("</table>")
    parts.append("</body></html>")
    return "".join(parts)


def content_for(message, statement_of, tournament_label, currency):
    """Content (subject, text, html) of one StatementMessage; `statement_of(entry_id)` is the
    engine's explain for the message's proposal."""
    from .adapters import Content

    statements = [statement_of(entry_id) for entry_id in message.entry_ids]
    subject = SUBJECT.format(tournament=tournament_label)
    if len(statements) > 1:
        subject += f" ({len(statements)} entries, {display(message.total_cents, currency)})"
    return Content(subject, plain_text(statements), html_of(statements, subject))
