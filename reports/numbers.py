"""How the report writes a number: three significant digits, thousands separators, never exponent notation
(2,200 rather than 2.2e+03), so a reader compares magnitudes at a glance; beyond a trillion, a power of ten
(3.22 × 10¹⁶). Every template and claim text uses it."""

from __future__ import annotations

import math

MISSING = "–"
NOT_MEASURED = "not measured"
SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def number(value, digits: int = 3) -> str:
    """``value`` rounded to ``digits`` significant digits: 2,200 / 85.6 / 0.00347 / 1.005 (digits=4); integers
    in full (12 divergences, not 12.0); "–" for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, (bool, str)):
        return str(value)
    if float(value).is_integer() and not isinstance(value, float):
        return f"{int(value):,}"
    value = float(value)
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if value == 0:
        return "0"
    rounded = float(f"{value:.{digits}g}")
    exponent = math.floor(math.log10(abs(rounded)))
    if exponent >= 12:
        return f"{rounded / 10**exponent:.{digits - 1}f} × 10{str(exponent).translate(SUPERSCRIPTS)}"
    return f"{rounded:,.{max(digits - 1 - exponent, 0)}f}"


def measured(value, digits: int = 3) -> str:
    """A quantity only some runs measure (energy): where one did not, "not measured", never "–" or 0."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NOT_MEASURED
    return number(value, digits)


def count(value) -> str:
    """A count (runs, divergences), whatever its dtype after pandas' aggregation: 12, not 12.0."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{int(value):,}"


def finite(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and math.isfinite(value)


def times(value, slower: str = "slower") -> str:
    """A ratio with its ×, as a reader takes it in: "3.96×"; below 1 its inverse and the word that turns it,
    "35.3× slower", never "0.0283×", which hides the order of magnitude. ``slower``: that word where the ratio
    is not of speeds ("fewer", "lower"). "–" where there is no ratio."""
    if not finite(value) or value <= 0:
        return MISSING
    return f"{number(1 / value)}× {slower}" if value < 1 else f"{number(value)}×"


def speed(value) -> str:
    """A ratio of speeds in a sentence: "3.96× faster", "35.3× slower"."""
    text = times(value)
    return text if text == MISSING or value < 1 else f"{text} faster"


def span(low, high, slower: str = "slower") -> str:
    """An interval of ratios: "3.61–4.32×", "30.1–40.2× slower", and across 1 "1.01× slower to 1.42×"."""
    if not (finite(low) and finite(high)) or low <= 0:
        return MISSING
    if low >= 1:
        return f"{number(low)}–{number(high)}×"
    if high < 1:
        return f"{number(1 / high)}–{number(1 / low)}× {slower}"
    return f"{times(low, slower)} to {times(high, slower)}"


def interval(ratio) -> str:
    """A ratio with its interval: "3.95× (3.61–4.32×)", "35.3× slower (30.1–40.2× slower)"."""
    return f"{times(ratio.value)} ({span(ratio.low, ratio.high)})"
