"""Each model's JAX ÷ Stan ratio split with nutpie (issue 81): nutpie runs both densities with one sampler, so
nutpie-JAX ÷ nutpie-Stan is the gradient's effect as nutpie calls it (one sampler, two autodiffs) and NumPyro ÷
nutpie-JAX the sampler's (one gradient, two samplers); nutpie-Stan ÷ Stan is what a Stan user gains by changing
sampler alone. nutpie calls a JAX gradient from Python once a leapfrog step (about 0.05–0.2 ms on a 2-core CPU),
and BridgeStan's from Rust: where a gradient costs less than that call, the gradient's part is nutpie's call into
JAX, not JAX's autodiff (the survey's equal clock compares those), and NumPyro's compiled loop wins it back in the
sampler's part.

Every part is a ratio of the pairings (``headline.comparisons``: paired blocks of one campaign, its interval), read
in the orientation named here. The parts are separate measurements: their product is close to the whole, not equal
to it, and the table says so.
"""

from __future__ import annotations

import math

from stanjax.reports.numbers import interval, times
from stanjax.reports.regimes import find
from stanjax.reports.stats import MIN_BLOCKS, Ratio

# (key, numerator, denominator, what the ratio isolates)
PARTS = (
    ("whole", "NumPyro-CPU", "Stan-CPU", "NumPyro ÷ Stan: both changed"),
    (
        "gradient",
        "nutpie-JAX-CPU",
        "nutpie-Stan-CPU",
        "the gradient as nutpie calls it: nutpie-JAX ÷ nutpie-Stan (one sampler)",
    ),
    ("sampler", "NumPyro-CPU", "nutpie-JAX-CPU", "the sampler and its calls: NumPyro ÷ nutpie-JAX (one gradient)"),
    ("stan_user", "nutpie-Stan-CPU", "Stan-CPU", "nutpie on your Stan program: nutpie-Stan ÷ Stan"),
)
NUTPIE = {"nutpie-JAX-CPU", "nutpie-Stan-CPU"}


def rows(comparisons: list[dict]) -> list[dict]:
    """Per machine, size and model where a nutpie engine has a ratio: each part's ratio (None where not measured),
    the part that moves the whole most, and the product of gradient and sampler beside the whole."""
    places = sorted(
        {
            (c["machine"], c["size"], m["model_id"])
            for c in comparisons
            if NUTPIE & {c["numerator"], c["denominator"]}
            for m in c["models"]
        }
    )
    out = []
    for machine, size, model_id in places:
        parts: dict[str, Ratio | None] = {}
        for key, num, den, _ in PARTS:
            entry, ratio, _ = find(comparisons, machine, size, num, den, model_id)
            parts[key] = ratio if entry is not None else None
        gradient, sampler = parts["gradient"], parts["sampler"]
        both = {"gradient": gradient, "sampler": sampler} if gradient is not None and sampler is not None else {}
        larger = max(both, key=lambda k: abs(math.log(both[k].value))) if both else None
        out.append(
            {
                "machine": machine,
                "size": size,
                "model_id": model_id,
                "parts": parts,
                "larger": larger,
                "product": gradient.value * sampler.value if gradient is not None and sampler is not None else None,
                "texts": {key: text(ratio) for key, ratio in parts.items()},
            }
        )
    return out


def stan_user_line(decomposed: list[dict]) -> list[dict]:
    """The first screen's "nutpie on your Stan program": per model, nutpie-Stan ÷ Stan where measured."""
    return [
        {"machine": r["machine"], "size": r["size"], "model_id": r["model_id"], "text": r["texts"]["stan_user"]}
        for r in decomposed
        if r["parts"]["stan_user"] is not None
    ]


def text(ratio: Ratio | None) -> str:
    """A part's ratio with its interval, or its value so far and its blocks, or "not measured"."""
    if ratio is None:
        return "not measured"
    if ratio.blocks < MIN_BLOCKS:
        return (
            f"{times(ratio.value)} so far ({ratio.blocks} block{'s' if ratio.blocks > 1 else ''}; {MIN_BLOCKS} needed)"
        )
    return interval(ratio)
