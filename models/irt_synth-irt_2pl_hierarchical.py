"""Hierarchical two-parameter IRT (2PL) on synthetic test answers: Carpenter's ~1000-parameter example.

The item difficulties are centred (``b ~ normal(mu_b, sigma_b)``): every item is answered by every student, so
each item's J answers pin its difficulty down (at default size a posterior sd near 0.1 against sigma_b near 1) and
the centred form has no funnel to fall into. Non-centred, as the programs had them before, they made a ridge: mu_b
traded off against the mean of b_raw, and at default size (4 chains x 1000 draws) no run on either side reached
bulk ESS 400 on mu_b (83-304 Stan, 134-304 NumPyro; R-hat up to 1.042); those records are superseded
(``results/SUPERSEDED``, rule ``irt-2pl-noncentred``). The log discriminations stay non-centred
(``a_raw = log a / sigma_a``): sigma_a is small (0.3 in the data) and, with few items, poorly known, and centred
they form a funnel with it at size tiny (10 items x 50 students: a NumPyro reference short of MCSE 0.01 sd after 8
batches of 8 chains, 0.05 sd).
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError


def generate(seed: int, I: int, J: int) -> dict:
    """I items answered by J students; ``y[i, j] = 1`` when student j got item i right."""
    if I < 2 or J < 2:
        raise SizeError(f"irt_synth needs I >= 2 items and J >= 2 students, got I={I}, J={J}")
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=J)
    discrimination = np.exp(0.3 * rng.normal(size=I))
    difficulty = rng.normal(-0.5, 1.0, size=I)
    logits = discrimination[:, None] * (ability[None, :] - difficulty[:, None])
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-logits)))
    return {"I": I, "J": J, "y": y.astype(np.int64)}


SPEC = ModelSpec(
    id="irt_synth-irt_2pl_hierarchical",
    title="Hierarchical IRT 2PL",
    description="Hierarchical 2PL item-response model, centred difficulties (each item answered by every student), "
    "abilities ~ normal(0, 1).",
    regime="hierarchy with ~1000 parameters: I x J likelihood terms at default size, every item answered by every "
    "student",
    parameters=(
        Parameter("theta", ("J",)),
        Parameter("mu_b"),
        Parameter("sigma_b"),
        Parameter("b", ("I",)),
        Parameter("sigma_a"),
        Parameter("a_raw", ("I",)),
    ),
    sizes={
        "tiny": {"I": 10, "J": 50},
        "small": {"I": 20, "J": 200},
        "default": {"I": 50, "J": 900},  # 1003 parameters
        "large": {"I": 100, "J": 10_000},
    },
    generate=generate,
)
