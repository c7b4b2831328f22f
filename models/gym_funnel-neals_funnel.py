"""Neal's funnel as inference-gym's ``NealsFunnel`` target writes it: ``v ~ normal(0, 3)``, then D - 1 values
``x ~ normal(0, exp(v / 2))``, with the exact answer the target states (every mean 0; sd 3 for v and
``exp(9 / 4)`` for each x) as its reference.

A posterior NUTS is known not to fit (Neal 2003; Betancourt & Girolami 2015): one step size cannot serve both
the neck (v near -6, x's scale e^-3) and the mouth (v near 6, scale e^3), so the chains diverge near the neck and
stay out of it, and v's mean comes out too high. It is here to show that failure in the records, on both sides,
and as the funnel a flow with importance resampling is asked to fit (``reports/approximations.py``); its runs are
not expected to pass the gates (``expected_to_fail``).
"""

import math

from stanjax.models import ModelSpec, Parameter, SizeError

ID = "gym_funnel-neals_funnel"
V_SD = 3.0


def generate(seed: int, D: int) -> dict:
    """No data: the dimension alone (``seed`` is accepted for the common interface and not used)."""
    del seed
    if D < 2:
        raise SizeError(f"neals_funnel needs D >= 2 dimensions, got D={D}")
    return {"D": D}


def ground_truth(size: str) -> dict:
    """The exact posterior summaries (no Monte Carlo error): x's variance is E[exp(v)] = exp(V_SD^2 / 2)."""
    from stanjax.models import data_hash

    D = SPEC.sizes[size]["D"]
    exact = {"mcse_mean": 0.0, "mcse_sd": 0.0}
    parameters = {"v": {"mean": 0.0, "sd": V_SD, **exact}}
    x_sd = math.exp(V_SD**2 / 4)
    parameters |= {f"x[{i + 1}]": {"mean": 0.0, "sd": x_sd, **exact} for i in range(D - 1)}
    header = {
        "source": "exact: inference-gym's NealsFunnel states mean 0 and sd (3, exp(9/4), ...) by formula",
        "model_id": ID,
        "size": size,
        "data_hash": data_hash(generate(0, D)),
    }
    return {"header": header, "parameters": parameters}


SPEC = ModelSpec(
    id=ID,
    title="Neal's funnel (gym)",
    description="Neal's funnel, inference-gym's 10-dimensional target: a scale and the values it scales, centred; "
    "its exact moments as reference.",
    regime="a funnel: no single step size fits, NUTS diverges and misses the neck",
    parameters=(Parameter("v"), Parameter("x", ("D - 1",))),
    sizes={"tiny": {"D": 10}, "small": {"D": 10}, "default": {"D": 10}, "large": {"D": 100}},
    generate=generate,
    ground_truth=ground_truth,
    expected_to_fail="NUTS cannot enter the funnel's neck: divergences and a biased v on every engine",
)
