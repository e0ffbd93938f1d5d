"""The app's colours for the charts drawn on the server, read from the one palette,
static/css/palette.css: its first `:root` block is the light scheme and the `:root` inside
`@media ... (prefers-color-scheme: dark)` overrides it for the dark one.

A chart is an SVG shown with <img>, so the page's CSS variables do not reach it, and the
Content-Security-Policy refuses a <style> in it. It is drawn once per scheme with presentation
attributes holding the scheme's colours (`?scheme=dark`); the page picks the picture with
<picture><source media="(prefers-color-scheme: dark)">, so the chart follows the page.
"""

import re
from functools import cache
from pathlib import Path

from django.contrib.staticfiles import finders

SCHEMES = ("light", "dark")

_DECLARATION = re.compile(r"--([a-z0-9-]+)\s*:\s*([^;]+);")
_ROOT = re.compile(r":root\s*\{([^{}]*)\}")
_DARK = re.compile(r"@media[^{]*prefers-color-scheme:\s*dark[^{]*\{\s*:root\s*\{([^{}]*)\}")
_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def scheme_of(request):
    """The scheme a chart is asked for: `?scheme=dark`, otherwise light."""
    return "dark" if request.GET.get("scheme") == "dark" else "light"


def colours(scheme="light"):
    """{"ink": ..., "chart_bg": ..., "cause_1": ...}: every variable of the scheme, named as in
    the CSS without its leading dashes and with "_" for "-" (so a template can say
    `{{ colour.chart_bg }}`)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: {scheme!r} is not one of {', '.join(SCHEMES)}")
    path = finders.find("css/palette.css")
    if not path:
        raise RuntimeError("static/css/palette.css is missing: the app's colours are defined there")
    # Read once per version of the file: an edited palette shows in the charts at once.
    return _read(scheme, path, Path(path).stat().st_mtime_ns)


@cache
def _read(scheme, path, _version):
    text = _COMMENT.sub("", Path(path).read_text())
    light = _ROOT.search(text)
    if light is None:
        raise RuntimeError("static/css/palette.css has no :root block (the light colours)")
    found = dict(_DECLARATION.findall(light.group(1)))
    if scheme == "dark":
        dark = _DARK.search(text)
        if dark is None:
            raise RuntimeError("static/css/palette.css has no prefers-color-scheme: dark block")
        found.update(_DECLARATION.findall(dark.group(1)))
    return {name.replace("-", "_"): value.strip() for name, value in found.items()}
