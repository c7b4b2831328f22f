"""posteriordb's posterior hmm_example-hmm_example: a two-state hidden Markov model with normal emissions, its data
set and reference posterior as an outside truth at default size (stan-dev/posteriordb at 28f8d3d;
models/posteriordb/SOURCE.md), the forward algorithm on both sides (Stan's hmm_marginal, a log-space scan in JAX).

The rewrite: stan/hmm_example.stan computes the forward algorithm by ``hmm_marginal``, as the Stan User's Guide
writes a hidden Markov model today, where the published program wrote the recursion in loops; the same posterior
(its header says why), without the published Viterbi path, which the NumPyro port does not compute either.

Default size is posteriordb's data set (N = 100 observations), where its reference applies. The other sizes draw
series of N observations from the same model with the reference posterior's means as its parameters (transitions
out of state 1: 0.67 / 0.33, out of state 2: 0.07 / 0.93; locations 3.0 and 8.8; uniform first state): the
sequential regime, N steps of a recursion per gradient, at lengths posteriordb does not have. Labels: as the
published program has them, mu is positive and ordered.
"""

from pathlib import Path

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError, posteriordb

SPEC_ID = "hmm_example-hmm_example"
CARRIED = Path(__file__).parent / "posteriordb"
published = posteriordb.fixed_data(CARRIED / "hmm_example.json")
TRANSITIONS = np.array([[0.67, 0.33], [0.07, 0.93]])  # row j: out of state j
LOCATIONS = np.array([3.0, 8.8])


def generate(seed: int, N: int, posteriordb_data: int = 0) -> dict:
    """posteriordb's data set where ``posteriordb_data`` is 1 (its N), else N observations of the two-state chain."""
    if posteriordb_data:
        data = published(seed)
        if data["N"] != N:
            raise SizeError(f"{SPEC_ID}: posteriordb's data set has N = {data['N']}, the size asks for N = {N}")
        return data
    if N < 2:
        raise SizeError(f"{SPEC_ID} needs N >= 2 observations, got N={N}")
    rng = np.random.default_rng(seed)
    states = np.empty(N, dtype=np.int64)
    states[0] = rng.integers(2)
    for t in range(1, N):
        states[t] = rng.choice(2, p=TRANSITIONS[states[t - 1]])
    return {"N": N, "K": 2, "y": rng.normal(LOCATIONS[states], 1.0)}


SIZES = {
    "tiny": {"N": 50},
    "small": {"N": 100},
    "default": {"N": 100, "posteriordb_data": 1},
    "large": {"N": 10_000},
}
published_truth = posteriordb.outside_truth(
    CARRIED / "hmm_example-hmm_example.reference.json", SPEC_ID, lambda seed: generate(seed, **SIZES["default"])
)


def ground_truth(size: str) -> dict | None:
    """posteriordb's reference where the data are posteriordb's; at the other sizes, this repository's own."""
    return published_truth(size) if SIZES[size].get("posteriordb_data") else None


SPEC = ModelSpec(
    id=SPEC_ID,
    title="Hidden Markov model, posteriordb",
    description="posteriordb's hmm_example-hmm_example (stan examples, stan benchmark): two states, normal emissions.",
    regime="sequential: the forward algorithm, a recursion over N observations per gradient",
    parameters=(Parameter("theta1", ("K",)), Parameter("theta2", ("K",)), Parameter("mu", ("K",))),
    sizes=SIZES,
    generate=generate,
    n_key="N",
    # simplexes: Stan >= 2.36 maps them through an isometric log ratio, NumPyro stick-breaks; positive_ordered:
    # Stan adds exponentials (mu[2] = mu[1] + exp(x[2])), NumPyro exponentiates an ordered vector
    different_transforms=("theta1", "theta2", "mu"),
    ground_truth=ground_truth,
)
