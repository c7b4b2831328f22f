"""Bernoulli matrix factorisation of a users x movies watch matrix (the TFP-on-JAX MovieLens example)."""

import numpy as np

from models import ModelSpec, Parameter, SizeError


def generate(seed: int, U: int, M: int, K: int) -> dict:
    """A U x M 0/1 watch matrix from rank-K user/movie factors plus user and movie popularity biases."""
    if U < 2 or M < 2 or not 1 <= K <= min(U, M):
        raise SizeError(f"movielens_synth needs U, M >= 2 and 1 <= K <= min(U, M), got U={U}, M={M}, K={K}")
    rng = np.random.default_rng(seed)
    user_factors = rng.normal(size=(U, K))
    movie_factors = rng.normal(size=(M, K))
    logits = -1.5 + rng.normal(0.0, 0.5, size=(U, 1)) + rng.normal(0.0, 0.5, size=(1, M))
    logits = logits + user_factors @ movie_factors.T
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-logits)))
    return {"U": U, "M": M, "K": K, "y": y.astype(np.int64)}


SPEC = ModelSpec(
    id="movielens_synth-matrix_factorization",
    description="Bernoulli matrix factorisation: user and movie embeddings (movie loadings lower-trapezoidal "
                "with a positive diagonal, which fixes rotation and sign) plus user and movie biases.",
    regime="many parameters, dense matrix products: U x M likelihood terms per gradient",
    parameters=(Parameter("mu"), Parameter("b_user", ("U",)), Parameter("b_movie", ("M",)),
                Parameter("user_factors", ("U", "K")), Parameter("movie_diag", ("K",)),
                Parameter("movie_lower", ("(K * (K - 1)) %/% 2",)), Parameter("movie_rest", ("M - K", "K"))),
    sizes={
        "tiny": {"U": 30, "M": 20, "K": 2},
        "small": {"U": 100, "M": 60, "K": 3},
        "default": {"U": 300, "M": 200, "K": 5},
        "large": {"U": 6_040, "M": 3_706, "K": 20},  # MovieLens-1M's users x movies
    },
    generate=generate,
    studies=("devices",),
    shard_rows=("y",),
    shard_sizes={"tiny": {"U": 32, "M": 20, "K": 2}, "cpu": {"U": 320, "M": 200, "K": 5},
                 "gpu": {"U": 6_040, "M": 3_706, "K": 20}},
)
