"""Bernoulli matrix factorisation of a users x movies watch matrix, its factors structured by genre.

Logits ``mu + b_user[u] + b_movie[m] + tastes[:, u] . movie_factors[m]``: each of the K factors is a genre,
``tastes[k, u]`` user u's taste for genre k, and movie m loads only on its own genres (known, several per
movie as MovieLens lists them), with a positive ``movie_loading``. The genre structure fixes the factors' rotation
and order, the positive loadings their signs; the product is still one dense U x M matrix per gradient.

Why not the unrestricted factorisation (TFP's MovieLens model, identified the usual way: the first K movies'
loadings lower-trapezoidal with a positive diagonal)? That failed R-hat on both engines in every repeat at size
small (records in results/xeon-2core/full-small-*: max R-hat 1.24-1.63, min bulk ESS 7-12 of 4000 draws). The
positive diagonal fixes the sign of one movie per factor only: the other M - 1 loadings hold a sign-flipped factor
in place, so a chain that starts flipped is pushed against ``movie_diag[k] -> 0`` and stays there. Measured with
NumPyro (4 chains, 1000 + 1000): the old data, R-hat 1.39; anchored first movies (loading 2.5 on their own factor),
R-hat 1.02 with K = 3 and 1.76 with K = 2 (``movie_diag[2]`` 1.45 in two chains, 0.08 in two); every loading
positive on the lower-trapezoidal pattern, 16 chains in 5 permutations of the factors (R-hat 1.81). With genre
structure and positive loadings, a taste's sign is pulled towards the data by every movie of its genre, and no
flipped or permuted basin is left: 16 chains x 300 draws at size small reached R-hat 1.009 and min bulk ESS 1515.

The user and movie biases, and each genre's tastes over the users, sum to zero (Stan's ``sum_to_zero_vector``,
NumPyro's ``ZeroSumNormal``: the same density on the same dimensions): they are deviations from the average user
and movie, and ``mu`` is the grand mean. With free biases and tastes the likelihood saw ``mu`` only through
``mu + mean(b_user) + mean(b_movie)`` and, through every movie's loadings, the genres' mean tastes: ridges that only
the priors bounded. At default size ``mu``'s bulk ESS was 2,529 of the reference's 20,000 draws, and none of four
runs of 4 x 1000 draws (two blocks on the AMD EPYC) was valid on either side: min bulk ESS 174-484, max R-hat up to
1.024. Zero-sum biases alone left it at 2,545 (the tastes' ridge: ``mu``'s sd 0.048); centred tastes too
(measured in the new default reference) remove it. Those runs are superseded (``results/SUPERSEDED``).
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError

# Besides its primary genre (movie m: genre m mod K, so every genre has M // K movies or more), a movie carries
# each other genre with this probability.
EXTRA_GENRE_PROBABILITY = 0.2


def generate(seed: int, U: int, M: int, K: int) -> dict:
    """A U x M 0/1 watch matrix from genre tastes and positive genre loadings plus user and movie popularity."""
    if U < 2 or M < 2 or not 1 <= K <= M:
        raise SizeError(f"movielens_synth needs U, M >= 2 and 1 <= K <= M, got U={U}, M={M}, K={K}")
    rng = np.random.default_rng(seed)
    genre = np.zeros((M, K), dtype=bool)
    genre[np.arange(M), np.arange(M) % K] = True
    genre |= rng.random((M, K)) < EXTRA_GENRE_PROBABILITY
    link_movie, link_genre = np.nonzero(genre)  # movie by movie
    movie_factors = np.zeros((M, K))
    movie_factors[link_movie, link_genre] = rng.lognormal(0.0, 0.3, size=len(link_movie))
    user_factors = rng.normal(size=(U, K))
    logits = -1.5 + rng.normal(0.0, 0.5, size=(U, 1)) + rng.normal(0.0, 0.5, size=(1, M))
    logits = logits + user_factors @ movie_factors.T
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-logits)))
    return {
        "U": U,
        "M": M,
        "K": K,
        "L": len(link_movie),
        "link_movie": link_movie.astype(np.int64) + 1,
        "link_genre": link_genre.astype(np.int64) + 1,
        "y": y.astype(np.int64),
    }


SPEC = ModelSpec(
    id="movielens_synth-matrix_factorization",
    title="Matrix factorisation (MovieLens-like)",
    description="Bernoulli matrix factorisation with genre-structured factors: user tastes per genre, each movie "
    "loading positively on its known genres only (which fixes rotation, order and sign), plus user "
    "and movie biases; biases and tastes are deviations from the average user and movie.",
    regime="many parameters, dense matrix products: U x M likelihood terms per gradient",
    parameters=(
        Parameter("mu"),
        Parameter("b_user", ("U",)),
        Parameter("b_movie", ("M",)),
        Parameter("tastes", ("K", "U")),
        Parameter("movie_loading", ("L",)),
    ),
    sizes={
        "tiny": {"U": 30, "M": 20, "K": 2},
        "small": {"U": 100, "M": 60, "K": 3},
        "default": {"U": 300, "M": 200, "K": 5},
        "large": {"U": 6_040, "M": 3_706, "K": 20},  # MovieLens-1M's users x movies
    },
    generate=generate,
    different_transforms=("b_user", "b_movie", "tastes"),  # zero-sum: Stan's isometric map, NumPyro's Householder
    studies=("devices",),
    shard_rows=("y",),
    shard_sizes={
        "tiny": {"U": 32, "M": 20, "K": 2},
        "cpu": {"U": 320, "M": 200, "K": 5},
        "gpu": {"U": 6_040, "M": 3_706, "K": 20},
    },
)
