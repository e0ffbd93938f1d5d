"""Dark mode: every colour of the app is defined once, in static/css/palette.css (light, and
dark for prefers-color-scheme), and everything else names a variable. The server-drawn charts
come in both schemes and the pages offer the dark one to a dark page."""

import re
from pathlib import Path

import pytest
from django.urls import reverse

from refunds_admin.web.palette import colours
from tests.support.factories import draft_proposal, posted_proposal, sunday_special_doc

ROOT = Path(__file__).resolve().parents[2]
PALETTE = ROOT / "static" / "css" / "palette.css"

# A colour written out: #rgb, #rgba, #rrggbb, #rrggbbaa, a colour function, or a colour's name
# given to a colour property or SVG attribute (the names a person is likely to type).
HEX = r"#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3,4})(?![0-9a-zA-Z_-])"
FUNCTION = r"\b(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch|color)\("
NAMES = "white|black|red|green|blue|gray|grey|orange|yellow|silver|navy|maroon|purple|teal"
NAMED = (
    r"(?:color|background|background-color|border(?:-[a-z]+)?|outline|fill|stroke|stop-color"
    r"|box-shadow|accent-color)\s*[:=]\s*[\"']?[^;\"'{}]*\b(?:" + NAMES + r")\b"
)
COLOUR = re.compile(f"{HEX}|{FUNCTION}|{NAMED}", re.I)

# Not drawn by the page: the favicon is the brand mark the browser shows on its tab, outside
# any page and its variables.
NOT_THE_PAGES = {ROOT / "static" / "favicon.svg"}

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_ROOT_BLOCK = re.compile(r":root\s*\{[^{}]*\}")


def _declarations(block):
    return dict(re.findall(r"--([a-z0-9-]+)\s*:\s*([^;]+);", block))


def _literals(path, text):
    return [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for m in COLOUR.finditer(text)
    ]


def test_no_colour_is_written_outside_the_palette():
    """A colour literal in a stylesheet, a template (pages, partials, the chart SVG, e-mails)
    or a Python module that draws HTML or SVG would stay the same in dark mode; it belongs in
    palette.css as a variable with a light and a dark value."""
    found = []
    for path in sorted((ROOT / "static").rglob("*")):
        if path.suffix not in (".css", ".js", ".svg") or path in NOT_THE_PAGES:
            continue
        text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())
        if path == PALETTE:  # its :root blocks are the definitions; nothing else may be there
            text = _ROOT_BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        found += _literals(path, text)
    for path in sorted((ROOT / "templates").rglob("*")):
        if path.is_file() and path.suffix in (".html", ".svg", ".txt"):
            found += _literals(path, path.read_text())
    for path in sorted((ROOT / "refunds_admin").rglob("*.py")):
        if "migrations" not in path.parts:
            found += _literals(path, path.read_text())
    assert not found, "colours outside static/css/palette.css:\n" + "\n".join(found)


def test_the_check_sees_a_colour_that_creeps_back(tmp_path):
    """The check above is only worth having if it finds what it looks for."""
    path = ROOT / "static" / "css" / "sample.css"
    for line in (
        ".x { color: #fff; }",
        ".x { border: 1px solid #b8c0cc80; }",
        ".x { background: rgb(0 0 0 / 50%); }",
        ".x { background-color: White; }",
        '<circle fill="#1f5fbf"/>',
        "f'<text fill=\"black\">'",
    ):
        assert _literals(path, line), line
    for line in (
        ".x { color: var(--ink); }",
        "th[aria-sort] a.sort { color: inherit; }",
        '<a href="#main">Skip</a> <a href="#lines">',
        "# issue #24: the dark scheme",
        ".topbar { background: var(--topbar-bg); }",
    ):
        assert not _literals(path, line), line


def test_the_dark_scheme_overrides_every_colour_of_the_light_one():
    text = _COMMENT.sub("", PALETTE.read_text())
    light = _declarations(_ROOT_BLOCK.search(text).group(0))
    dark_block = re.search(
        r"@media[^{]*prefers-color-scheme:\s*dark[^{]*\{\s*(:root\s*\{[^{}]*\})", text
    )
    assert dark_block, "palette.css has no @media (prefers-color-scheme: dark) block"
    dark = _declarations(dark_block.group(1))
    assert set(light) - set(dark) == set(), "light colours with no dark value"
    assert set(dark) - set(light) == set(), "dark colours with no light value"
    assert re.search(r":root\s*\{[^}]*color-scheme:\s*light dark", text), (
        "color-scheme: light dark lets form controls follow the scheme"
    )
    # Python reads the same file: what the charts draw with is what the pages show.
    assert colours("light") == {k.replace("-", "_"): v.strip() for k, v in light.items()}
    assert colours("dark") == {k.replace("-", "_"): v.strip() for k, v in dark.items()}


def test_every_variable_a_rule_uses_is_in_the_palette():
    """A misspelt variable silently draws nothing (no colour at all)."""
    defined = _declarations(PALETTE.read_text())
    used = set()
    for path in (ROOT / "static" / "css").glob("*.css"):
        used |= set(re.findall(r"var\(--([a-z0-9-]+)\)", path.read_text()))
    assert used, "app.css names the palette's variables"
    assert used - set(defined) == set()
    chart = (ROOT / "templates" / "web" / "proposal_chart.svg").read_text()
    assert set(re.findall(r"colour\.([a-z0-9_]+)", chart)) <= set(colours("light"))


def _luminance(colour):
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a, b):
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_charts_text_is_readable_in_each_scheme(scheme):
    """axe checks the pages' text in both schemes, but not the text inside a chart drawn as an
    image: its amounts and labels need 4.5:1 on the chart's background (WCAG AA) too."""
    c = colours(scheme)
    for text in ("chart_text", "chart_label"):
        assert _contrast(c[text], c["chart_bg"]) >= 4.5, (scheme, text)
    # The dots and bars are graphics: 3:1 (WCAG 1.4.11) in the scheme built for this issue.
    if scheme == "dark":
        for mark in ["chart_dot", "chart_dot_capped"] + [f"cause_{i}" for i in range(1, 8)]:
            assert _contrast(c[mark], c["chart_bg"]) >= 3, (scheme, mark)


@pytest.mark.django_db
def test_the_payout_chart_is_drawn_in_the_scheme_asked_for(client, support, auditor):
    doc = sunday_special_doc("UP-DARK", entries=60, active=50, prizes=[400_00] * 5)
    proposal = draft_proposal(support, doc=doc)
    client.force_login(auditor)
    url = reverse("proposal_chart", args=[proposal.pk])
    light = client.get(url).content.decode()
    dark = client.get(url + "?scheme=dark").content.decode()
    assert f'fill="{colours("light")["chart_bg"]}"' in light
    assert f'fill="{colours("dark")["chart_bg"]}"' in dark
    assert f'fill="{colours("light")["chart_bg"]}"' not in dark
    assert f'fill="{colours("dark")["chart_dot"]}"' in dark
    # Anything else is the light chart (an old link, a typo), never an error.
    assert client.get(url + "?scheme=purple").content.decode() == light
    page = client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    assert f'<source srcset="{url}?scheme=dark" media="(prefers-color-scheme: dark)">' in page


@pytest.mark.django_db
def test_the_finance_chart_is_drawn_in_the_scheme_asked_for(client, support, manager, auditor):
    posted_proposal(support, manager, external_id="FR-DARK")
    client.force_login(auditor)
    url = reverse("finance_report_chart") + "?currency=USD"
    light = client.get(url).content.decode()
    dark = client.get(url + "&scheme=dark").content.decode()
    for name in ("chart_grid", "chart_text", "chart_label", "cause_1"):
        assert f'="{colours("light")[name]}"' in light, name
        assert f'="{colours("dark")[name]}"' in dark, name
        assert f'="{colours("light")[name]}"' not in dark, name
    page = client.get(reverse("finance_report")).content.decode()
    assert re.search(
        r'<source srcset="[^"]*scheme=dark" media="\(prefers-color-scheme: dark\)">', page
    )
