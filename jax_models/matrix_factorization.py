import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def matrix_factorization(U, M, K, L, link_movie, link_genre, y=None):
    # Deviations from the average user and movie: the biases and each genre's tastes sum to zero (Stan's
    # sum_to_zero_vector with a std_normal prior: the same density on the same dimensions), so none can trade off
    # against the grand mean mu
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    b_user = numpyro.sample("b_user", dist.ZeroSumNormal(1.0, event_shape=(U,)))
    b_movie = numpyro.sample("b_movie", dist.ZeroSumNormal(1.0, event_shape=(M,)))
    with numpyro.plate("genres", K):
        tastes = numpyro.sample("tastes", dist.ZeroSumNormal(1.0, event_shape=(U,)))  # tastes[k, u]
    user_factors = tastes.T
    with numpyro.plate("memberships", L):
        movie_loading = numpyro.sample("movie_loading", dist.LogNormal(0.0, 0.5))
    # zero outside a movie's genres (the data block indexes from 1, as Stan does)
    movie_factors = jnp.zeros((M, K)).at[link_movie - 1, link_genre - 1].set(movie_loading)
    logits = mu + b_user[:, None] + b_movie[None, :] + user_factors @ movie_factors.T
    with numpyro.plate("user_rows", U, dim=-2), numpyro.plate("movie_columns", M, dim=-1):
        numpyro.sample("y", dist.Bernoulli(logits=logits), obs=y)
