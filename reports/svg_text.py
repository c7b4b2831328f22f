"""An SVG's text made lighter and its ids its own, after matplotlib wrote it (``reports.figures.svg``): styles it
repeats become classes, the ids it numbers alike in every figure get the figure's hash."""

from __future__ import annotations

import hashlib
import re
from collections import Counter

STYLE = re.compile(r' style="([^"]*)"')
# An id matplotlib hashes (salted by the title: ``svg``) is the figure's own already: clip paths (p...) and markers
# (m...), which nearly every reference points to.
ID = re.compile(r' id="(?![mp][0-9a-f]{10}")([^"]+)"')
REFERENCE = re.compile(r'(url\(#|href="#)([^")]+)')


def own_ids(text: str) -> str:
    """Every id of an SVG that is not hashed, and every reference to one, prefixed by a hash of the SVG:
    matplotlib numbers its groups alike in every figure (``figure_1``, ``axes_1``), and our marks
    (``figure-title``, ``x-label``) are the same in each, so a page of figures repeated ids (``figure_1`` 19
    times on figures.html)."""
    prefix = f"f{hashlib.sha1(text.encode()).hexdigest()[:8]}-"
    renamed = set(ID.findall(text))
    text = ID.sub(lambda m: f' id="{prefix}{m[1]}"', text)
    return REFERENCE.sub(lambda m: f"{m[1]}{prefix}{m[2]}" if m[2] in renamed else m[0], text)


def shared_styles(text: str) -> str:
    """Each inline style an SVG repeats becomes a class defined once in the SVG's own ``<style>``: matplotlib
    writes a grid line's or a tick's whole style on every one (a third of the first screen's figure: 83 -> 56 KB).
    A class is named by its style's hash, so figures of one page that share a style share one meaning for it."""
    counts = Counter(STYLE.findall(text))
    shared = {style: f"s{hashlib.sha1(style.encode()).hexdigest()[:7]}" for style, n in counts.items() if n > 1}
    if not shared:
        return text
    text = STYLE.sub(lambda m: f' class="{shared[m[1]]}"' if m[1] in shared else m[0], text)
    start = text.index(">") + 1
    rules = "".join(f".{name}{{{style}}}" for style, name in shared.items())
    return f"{text[:start]}<style>{rules}</style>{text[start:]}"
