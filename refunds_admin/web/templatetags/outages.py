"""Display filters of the outage pages."""

from django import template

from refunds_admin.incidents.services import elapsed_in_words

register = template.Library()


@register.filter
def duration(seconds):
    """Seconds in the one duration format of every screen (incidents.services.elapsed_in_words):
    "1 h 4 min", "12 min 5 s"; under a minute with a tenth ("8.2 s": batch prepare timings)."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return elapsed_in_words(seconds)
