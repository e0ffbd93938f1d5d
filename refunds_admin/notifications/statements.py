"""A player's statement as sent: the engine's `explain` text for each of their credited entries
(the policy's own layout), in plain text and in HTML. Built the same way on every retry."""

from html import escape

from refunds_admin.payouts.money import display

SUBJECT = "Your refund for cancelled tournament {tournament}"

# What a player reads about each part given back in the form they paid it (one table: the same
# words on every statement, the page and the e-mail).
FORM_SENTENCES = {
    "ticket": "Your ticket {ticket_id} ({amount}) has been returned to your account",
    "tournament_money": "{amount} has been credited to your tournament money balance",
    "cash": "{amount} has been paid to your cash balance",
}


def form_sentences(credits, currency):
    """The sentences naming what came back in which form, for one entry's credits (dicts with
    method, ticket_id, amount_cents): one per ticket, one for tournament money, and the cash
    part, tickets first. Nothing for an entry paid all in cash: its statement says it all."""
    credits = list(credits)
    if all((c.get("method") or "cash") == "cash" for c in credits):
        return []
    out = []
    for c in sorted(credits, key=lambda c: c.get("ticket_id") or ""):
        if c["method"] == "ticket":
            out.append(
                FORM_SENTENCES["ticket"].format(
                    ticket_id=c["ticket_id"], amount=display(c["amount_cents"], currency)
                )
            )
    for method in ("tournament_money", "cash"):
        cents = sum(c["amount_cents"] for c in credits if (c.get("method") or "cash") == method)
        if cents:
            out.append(FORM_SENTENCES[method].format(amount=display(cents, currency)))
    return out


def plain_text(statements):
    """The entries' statements, one after the other (a re-entry has several)."""
    return "\n\n".join(statements) + "\n"


def html_of(statements, title):
    """The same lines as a small table per entry: label left, amount right."""
    parts = [
        # The statement's words are English (payouts.labels): said so for screen readers.
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head><body>",
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


def content_for(message, statement_of, tournament_label, currency, forms_of=None):
    """Content (subject, text, html) of one StatementMessage; `statement_of(entry_id)` is the
    engine's explain for the message's proposal; `forms_of(entry_id)` the entry's credits that
    are not all cash (form_sentences), each sentence a line after the entry's statement."""
    from .adapters import Content

    statements = []
    for entry_id in message.entry_ids:
        text = statement_of(entry_id)
        sentences = form_sentences(forms_of(entry_id), currency) if forms_of else []
        if sentences:
            text = text.rstrip("\n") + "\n\n" + "\n".join(sentences)
        statements.append(text)
    subject = SUBJECT.format(tournament=tournament_label)
    if len(statements) > 1:
        subject += f" ({len(statements)} entries, {display(message.total_cents, currency)})"
    return Content(subject, plain_text(statements), html_of(statements, subject))
