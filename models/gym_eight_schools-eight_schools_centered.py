"""Eight schools as inference-gym's ``EightSchools`` target writes it (centred effects, a normal prior on the log
of their scale), checked against the ground truth its authors made, not against a reference of ours.

The data are the eight-schools values the target holds in its own code (Rubin 1981, the same numbers as
``eight_schools-eight_schools_noncentered``); the ground truth is read from the installed package at run time.
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, gym

ID = "gym_eight_schools-eight_schools_centered"
# inference_gym/targets/eight_schools.py: treatment_effects and treatment_stddevs
EFFECTS = (28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0)
STANDARD_ERRORS = (15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0)


def generate(seed: int) -> dict:
    """The target's fixed data; ``seed`` is accepted for the common interface and not used."""
    del seed
    return {"J": len(EFFECTS), "y": np.array(EFFECTS), "sigma": np.array(STANDARD_ERRORS)}


def ground_truth(size: str) -> dict:
    return gym.ground_truth(
        "eight_schools", {name: name for name in ("avg_effect", "log_stddev", "school_effects")}, ID, size, generate(0)
    )


SPEC = ModelSpec(
    id=ID,
    title="Eight schools, centred (gym)",
    description="Eight schools, inference-gym's centred model with a log-scale prior; its ground truth as reference.",
    regime="tiny model: per-call and JIT overhead dominate",
    parameters=(Parameter("avg_effect"), Parameter("log_stddev"), Parameter("school_effects", ("J",))),
    sizes={"tiny": {}, "small": {}, "default": {}, "large": {}},
    generate=generate,
    ground_truth=ground_truth,
)
