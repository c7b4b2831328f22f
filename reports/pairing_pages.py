"""The pairings' pages: each list of pairings ("All pairings", "nutpie", "Stan side") on a page of tables and a page
of forest plots, linked both ways (one page of forests was 466 KB, one of tables 412 KB: a page each keeps every
page under the 400 KB it may weigh)."""

from __future__ import annotations

import re
from typing import NamedTuple

from stanjax.reports import figures


class PairingList(NamedTuple):
    """One list: its tables' page, its title, its section's anchor on both pages, its forest plots' page."""

    tables: str
    title: str
    anchor: str
    forests: str


# By the report context's key of each list.
PAIRING_LISTS = {
    "comparisons": PairingList("pairings.html", "All pairings", "headline", "forests.html"),
    "nutpie": PairingList("pairings-nutpie.html", "nutpie", "nutpie", "forests-nutpie.html"),
    "stan_side": PairingList("pairings-stan-side.html", "Stan side", "stan-side", "forests-stan-side.html"),
}


def others(key: str, page: str) -> list[dict]:
    """The other lists' pages of one kind (``page``: "tables" or "forests"), as a list's page links to them."""
    return [{"page": getattr(p, page), "title": p.title} for k, p in PAIRING_LISTS.items() if k != key]


def forest_anchor(comparison: dict) -> str:
    """The forests page's anchor of a pairing's forest plot (its tables' page links to it)."""
    text = (
        f"forest-{comparison['machine']}-{comparison['size']}-{comparison['numerator']}-vs-{comparison['denominator']}"
    )
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def listed(context: dict) -> dict[str, list[dict]]:
    """Every list's pairings, each with where its forest plot is."""
    return {
        key: [{**c, "forest_anchor": forest_anchor(c), "forest_page": p.forests} for c in context[key]]
        for key, p in PAIRING_LISTS.items()
    }


def pages(context: dict) -> dict[str, dict]:
    """Both pages of every list, as ``build.write_pages`` renders them (its template and what it adds)."""
    out: dict[str, dict] = {}
    for key, p in PAIRING_LISTS.items():
        out[p.tables] = dict(
            template="pairings.html", side=dict(anchor=p.anchor, title=p.title, others=others(key, "tables"))
        )
        forests = [
            {
                "anchor": forest_anchor(c),
                "title": f"{c['numerator']} vs {c['denominator']} on {c['machine']}, size {c['size']}",
                "svg": figures.forest_svg(c),
            }
            for c in context[key]
        ]
        side: dict = dict(anchor=p.anchor, title=p.title, others=others(key, "forests"), tables=p.tables)
        out[p.forests] = dict(template="forests.html", side=side, forests=forests)
    return out
