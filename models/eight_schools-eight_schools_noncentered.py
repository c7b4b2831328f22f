"""The classic eight-schools data (Rubin 1981) with the non-centred hierarchical model (posteriordb's ID)."""

import numpy as np

from stanjax.models import ModelSpec, Parameter

# Rubin (1981), Table 2: estimated coaching effects and their standard errors.
EFFECTS = (28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0)
STANDARD_ERRORS = (15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0)


def generate(seed: int) -> dict:
    """The fixed published data; ``seed`` is accepted for the common interface and not used."""
    del seed
    return {
        "J": len(EFFECTS),
        "y": np.array(EFFECTS),
        "sigma": np.array(STANDARD_ERRORS),
    }


SPEC = ModelSpec(
    id="eight_schools-eight_schools_noncentered",
    title="Eight schools, non-centred",
    description="Eight schools, non-centred hierarchical normal model (8 observations, 10 parameters).",
    regime="tiny model: per-call and JIT overhead dominate",
    parameters=(Parameter("mu"), Parameter("tau"), Parameter("theta_tilde", ("J",))),
    # The data set is fixed, so every preset is the same 8 schools.
    sizes={"tiny": {}, "small": {}, "default": {}, "large": {}},
    generate=generate,
)
