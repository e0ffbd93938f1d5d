"""Display filters of the outage pages."""

from django import template

register = template.Library()


@register.filter
def duration(seconds):
    """Seconds as "1 h 04 min", "12 min 05 s" or "8.2 s" (outage timings)."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"
