"""The sparse test data of the Stan User's Guide's multilevel 2PL item-response model ("Item-response theory
models", hierarchical 2PL): each of J students answers M of the K questions, so each question is answered by
J M / K students on average, few where there are many questions. That is Carpenter's case (StanCon 2024) of a
~1000-parameter IRT-2PL that NUTS fits poorly: with ~5 answers a question its difficulty and discrimination are
barely informed, and the centred priors ``beta ~ normal(0, sigma_beta)``, ``gamma ~ lognormal(0, sigma_gamma)``
form funnels with their scales.

Two programs share these data (``irt_sparse_synth-irt_2pl_centred``, the guide's, and
``irt_sparse_synth-irt_2pl_noncentred``, its non-centred twin, whose reference is the centred model's).
"""

import numpy as np

from stanjax.models import SizeError

# students x questions x answers per student: 5 answers a question from small up (1,003 parameters at default,
# Carpenter's size); 10 at tiny, where the twin's reference converges in minutes (at 5, NumPyro at target 0.95
# reached R-hat 1.04 with 71 divergences on 50 x 100 x 10: the scales' half-Cauchy tails, barely informed)
SIZES = {
    "tiny": {"J": 100, "K": 100, "M": 10},
    "small": {"J": 100, "K": 200, "M": 10},
    "default": {"J": 200, "K": 400, "M": 10},
    "large": {"J": 2000, "K": 4000, "M": 10},
}
# the generating values: difficulties around -0.5 with sd 1, discriminations lognormal with sd 0.3 on the log
# scale (a scale the data can barely see at 5 answers a question: its funnel)
MU_BETA, SIGMA_BETA, SIGMA_GAMMA = -0.5, 1.0, 0.3


def generate(seed: int, J: int, K: int, M: int) -> dict:
    """Student ``jj[n]`` answered question ``kk[n]`` (``y[n] = 1``: correctly); each student answers M distinct
    questions drawn at random."""
    if J < 2 or K < 2 or not 1 <= M <= K:
        raise SizeError(f"irt_sparse_synth needs J >= 2, K >= 2 and 1 <= M <= K, got J={J}, K={K}, M={M}")
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=J)
    difficulty = rng.normal(0.0, SIGMA_BETA, size=K)
    discrimination = np.exp(rng.normal(0.0, SIGMA_GAMMA, size=K))
    jj = np.repeat(np.arange(J), M)
    kk = np.concatenate([rng.choice(K, size=M, replace=False) for _ in range(J)])
    logits = discrimination[kk] * (ability[jj] - (difficulty[kk] + MU_BETA))
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-logits)))
    return {
        "J": J,
        "K": K,
        "N": J * M,
        "jj": jj.astype(np.int64) + 1,  # Stan indexes from 1
        "kk": kk.astype(np.int64) + 1,
        "y": y.astype(np.int64),
    }
