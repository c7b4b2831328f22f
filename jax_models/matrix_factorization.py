import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def matrix_factorization(U, M, K, L, link_movie, link_genre, y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("users", U):
        b_user = numpyro.sample("b_user", dist.Normal(0.0, 1.0))
    with numpyro.plate("movies", M):
        b_movie = numpyro.sample("b_movie", dist.Normal(0.0, 1.0))
    user_factors = numpyro.sample("user_factors", dist.Normal(0.0, 1.0).expand([U, K]).to_event(2))  # genre tastes
    with numpyro.plate("memberships", L):
        movie_loading = numpyro.sample("movie_loading", dist.LogNormal(0.0, 0.5))
    # zero outside a movie's genres (the data block indexes from 1, as Stan does)
    movie_factors = jnp.zeros((M, K)).at[link_movie - 1, link_genre - 1].set(movie_loading)
    logits = mu + b_user[:, None] + b_movie[None, :] + user_factors @ movie_factors.T
    with numpyro.plate("user_rows", U, dim=-2), numpyro.plate("movie_columns", M, dim=-1):
        numpyro.sample("y", dist.Bernoulli(logits=logits), obs=y)
