"""Hierarchical two-parameter IRT (2PL) on synthetic test answers: Carpenter's ~1000-parameter example."""

import numpy as np

from models import ModelSpec, Parameter, SizeError


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
    description="Hierarchical 2PL item-response model, non-centred item parameters, abilities ~ normal(0, 1).",
    regime="funnel-prone hierarchy with ~1000 parameters at default size (I x J likelihood terms)",
    parameters=(Parameter("theta", ("J",)), Parameter("mu_b"), Parameter("sigma_b"), Parameter("b_raw", ("I",)),
                Parameter("sigma_a"), Parameter("a_raw", ("I",))),
    sizes={
        "tiny": {"I": 10, "J": 50},
        "small": {"I": 20, "J": 200},
        "default": {"I": 50, "J": 900},  # 1003 parameters
        "large": {"I": 100, "J": 10_000},
    },
    generate=generate,
    claims=("carpenter",),
)
