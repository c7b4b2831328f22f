"""How a published claim is judged: the verdicts, the band a claimed ratio is read against, and which model's runs
speak to a claim.

A ratio claim is "reproduced" when the 90 % interval of the measured ratio (over paired blocks: ``reports.stats``)
overlaps the claimed value widened by a factor TOLERANCE either way, "not reproduced" when the whole interval lies
outside that band, "insufficient data" when the ratio comes from fewer than ``stats.MIN_BLOCKS`` blocks or from
tiny data, "inconclusive" when the records cannot reach the claim's conditions (throughput still rising at the most
chains measured), and "not measured here" (with the reason) when the records hold no valid run that speaks to it.
"""

from __future__ import annotations

from stanjax import models
from stanjax.reports.numbers import count, interval, span, times
from stanjax.reports.stats import MIN_BLOCKS, Ratio

TOLERANCE = 1.5
REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"
NOT_MEASURED = "not measured here"
INSUFFICIENT = "insufficient data"
INCONCLUSIVE = "inconclusive"
DEPENDS = "depends on the regime"


def claim_model(claim: str) -> str | None:
    """The model whose runs speak to a claim (``ModelSpec.claims``), or None if no registered model does."""
    return next((spec.id for spec in models.registry().values() if claim in spec.claims), None)


def ratio_verdict(ratio: Ratio, claimed: float, size: str | None = None) -> str:
    """Reproduced or not by the stated band; "insufficient data" for a ratio from fewer than MIN_BLOCKS paired
    blocks (no interval reaches 90 %) or from tiny data (a smoke test, not a measurement)."""
    if ratio.blocks < MIN_BLOCKS:
        return (
            f"{INSUFFICIENT} ({count(ratio.blocks)} blocks; {MIN_BLOCKS} needed: {times(ratio.value)} has no "
            "90 % interval)"
        )
    if size == "tiny":
        return f"{INSUFFICIENT} (measured on tiny data: {times(ratio.value)})"
    low, high = claimed / TOLERANCE, claimed * TOLERANCE
    rule = f"claimed {claimed:g}×, band {span(low, high)}, measured 90 % interval {span(ratio.low, ratio.high)}"
    if ratio.high < low or ratio.low > high:
        return f"{NOT_REPRODUCED} ({rule})"
    return f"{REPRODUCED} ({rule})"


def shown(ratio: Ratio) -> str:
    """A ratio with its interval, or under MIN_BLOCKS blocks the ratio and its blocks (it has no 90 % interval)."""
    return interval(ratio) if ratio.blocks >= MIN_BLOCKS else f"{times(ratio.value)} ({count(ratio.blocks)} blocks)"


VERDICTS = (REPRODUCED, NOT_REPRODUCED, DEPENDS, INSUFFICIENT, INCONCLUSIVE, NOT_MEASURED)


def head(verdict: str) -> str:
    """A verdict without its explanation: "reproduced", "not measured here", ..."""
    return verdict.split(" (")[0].split(":")[0].split(" in every regime")[0]


def verdict_class(verdict: str) -> str:
    """The CSS class the report colours a verdict with."""
    return {REPRODUCED: "reproduced", NOT_REPRODUCED: "not", DEPENDS: "mixed"}.get(head(verdict), "none")
