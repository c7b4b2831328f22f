"""A Brownian motion observed with noise, its middle steps unobserved: inference-gym's
``BrownianMotionMissingMiddleObservations`` target in its default (non-Markov-chain) form, checked against the
ground truth its authors made, not against a reference of ours.

The target: ``locs[1] ~ normal(0, innovation_noise_scale)``, ``locs[t] ~ normal(locs[t - 1],
innovation_noise_scale)`` for t = 2..30, and ``observed_locs[t] ~ normal(locs[t], observation_noise_scale)`` at
the observed steps (the scales are known: 0.1 and 0.15). Its one quantity under the identity transformation is the
30-vector of latent locations, our parameter ``locs``; the latent steps are centred, as the target declares them.

Data: ``inference_gym/internal/datasets/brownian_motion_missing_middle_observations.py`` (30 float32 observations,
the middle ten NaN, and the two scales), read at run time from the installed package, as
``internal/data.py``'s ``brownian_motion_missing_middle_observations()`` passes them on, unchanged. The package
marks an unobserved step with NaN; our data must be finite, so they carry the observed steps' 1-based indices and
values instead (the float32 values widened to float64 exactly); the target's likelihood skips the NaN steps, so the
posterior is the same. Ground truth: ``inference_gym/targets/ground_truth/
brownian_motion_missing_middle_observations.py`` (unnamed quantity ``IDENTITY_MEAN`` ...).
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, gym

ID = "gym_brownian-brownian_motion_missing_middle"
DATASET = "brownian_motion_missing_middle_observations"


def generate(seed: int) -> dict:
    """The target's fixed data; ``seed`` is accepted for the common interface and not used."""
    del seed
    source = gym.dataset(DATASET)
    observed_locs = np.asarray(source.OBSERVED_LOC, dtype=np.float64)  # float32 in the package: widened exactly
    observed = ~np.isnan(observed_locs)
    return {
        "T": int(observed_locs.size),
        "N_obs": int(observed.sum()),
        "obs_t": np.flatnonzero(observed).astype(np.int64) + 1,  # Stan indexes from 1
        "y_obs": observed_locs[observed],
        "innovation_noise_scale": float(source.INNOVATION_NOISE),
        "observation_noise_scale": float(source.OBSERVATION_NOISE),
    }


def ground_truth(size: str) -> dict:
    return gym.ground_truth(DATASET, {"locs": ""}, ID, size, generate(0))


SPEC = ModelSpec(
    id=ID,
    title="Brownian motion, missing middle (gym)",
    description="Brownian motion, 30 steps, middle 10 unobserved, known noise scales (inference-gym); its ground "
    "truth as reference.",
    regime="tiny model: per-call and JIT overhead dominate",
    parameters=(Parameter("locs", ("T",)),),
    sizes={"tiny": {}, "small": {}, "default": {}, "large": {}},
    generate=generate,
    ground_truth=ground_truth,
)
