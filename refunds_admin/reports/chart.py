"""The report's chart: refunds paid per month, stacked by cause, drawn as SVG on the server (no
chart library in the browser). Colours are presentation attributes, not style attributes, so
the chart passes a strict Content-Security-Policy. They are the app's palette in the scheme the
page shows (light or dark), given by the caller: `web.palette.colours(scheme)`, read from
static/css/palette.css, where every colour of the app is defined once."""

from html import escape

from refunds_admin.payouts.money import display

# The palette's cause colours (--cause-1 ... --cause-7), in the order the causes are stacked.
CAUSE_COLOURS = 7


def cause_colour(colours, j):
    return colours[f"cause_{j % CAUSE_COLOURS + 1}"]


def nice_ceiling(cents):
    """The axis top at or above `cents`: 1, 2, 2.5 or 5 times a power of ten of whole units, so
    that its quarters are round amounts ($150,000, not $149,522.62). In cents throughout."""
    power = 100  # one whole unit, in cents
    while True:
        for top in (power, 2 * power, 5 * power // 2, 5 * power):
            if top >= cents:
                return top
        power *= 10


def stacked_months_svg(months, causes, values, currency, labels, *, colours, width=760, height=320):
    """The SVG text; `colours` is the palette of one scheme ({"chart_bg": ..., "cause_1": ...})."""
    grid, text, label = colours["chart_grid"], colours["chart_text"], colours["chart_label"]
    pad_left, pad_bottom, pad_top, legend_h = 90, 40, 16, 22 * ((len(causes) + 2) // 3)
    plot_h = height - pad_bottom - pad_top
    total_h = height + legend_h
    totals = [sum(values.get((m, c), 0) for c in causes) for m in months]
    top = nice_ceiling(max(totals, default=0) or 1)
    n = max(len(months), 1)
    slot = (width - pad_left - 10) / n
    bar = max(4.0, slot * 0.7)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
        f'viewBox="0 0 {width} {total_h}" role="img" aria-labelledby="chart-title" '
        'font-family="sans-serif" font-size="11">',
        f'<title id="chart-title">Refunds paid per month in {escape(currency)}, by cause</title>',
    ]
    for i in range(5):  # horizontal grid with amounts
        value = top * i / 4
        y = pad_top + plot_h - plot_h * i / 4
        out.append(
            f'<line x1="{pad_left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="{grid}"/>'
            f'<text x="{pad_left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{text}">'
            f"{escape(display(int(value), currency, symbol=False, drop_zero_cents=True))}</text>"
        )
    for i, month in enumerate(months):
        x = pad_left + slot * i + (slot - bar) / 2
        y = pad_top + plot_h
        for j, cause in enumerate(causes):
            cents = values.get((month, cause), 0)
            if not cents:
                continue
            h = plot_h * cents / top
            y -= h
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{cause_colour(colours, j)}"><title>{escape(month.strftime("%b %Y"))}, '
                f"{escape(labels.get(cause, cause))}: {escape(display(cents, currency, symbol=False))}</title></rect>"
            )
        out.append(
            f'<text x="{x + bar / 2:.1f}" y="{pad_top + plot_h + 16}" text-anchor="middle" '
            f'fill="{label}">{escape(month.strftime("%b %Y"))}</text>'
        )
    if not months:
        out.append(
            f'<text x="{width / 2}" y="{pad_top + plot_h / 2}" text-anchor="middle" fill="{text}">'
            "No refunds posted in this range</text>"
        )
    for j, cause in enumerate(causes):
        lx = pad_left + (j % 3) * 220
        ly = height + 22 * (j // 3)
        out.append(
            f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{cause_colour(colours, j)}"/>'
            f'<text x="{lx + 18}" y="{ly}" fill="{label}">{escape(labels.get(cause, cause))}</text>'
        )
    out.append("</svg>")
    return "".join(out)
