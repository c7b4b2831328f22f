import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def matrix_factorization(U, M, K, y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("users", U):
        b_user = numpyro.sample("b_user", dist.Normal(0.0, 1.0))
    with numpyro.plate("movies", M):
        b_movie = numpyro.sample("b_movie", dist.Normal(0.0, 1.0))
    user_factors = numpyro.sample("user_factors", dist.Normal(0.0, 1.0).expand([U, K]).to_event(2))
    # the first K movies' loadings: lower triangle with a positive diagonal, which fixes rotation and sign
    movie_diag = numpyro.sample("movie_diag", dist.HalfNormal(1.0).expand([K]).to_event(1))
    movie_lower = numpyro.sample("movie_lower", dist.Normal(0.0, 1.0).expand([K * (K - 1) // 2]).to_event(1))
    movie_rest = numpyro.sample("movie_rest", dist.Normal(0.0, 1.0).expand([M - K, K]).to_event(2))
    first = jnp.diag(movie_diag).at[jnp.tril_indices(K, -1)].set(movie_lower)  # row-major, as Stan fills it
    movie_factors = jnp.concatenate([first, movie_rest])
    logits = mu + b_user[:, None] + b_movie[None, :] + user_factors @ movie_factors.T
    with numpyro.plate("user_rows", U, dim=-2), numpyro.plate("movie_columns", M, dim=-1):
        numpyro.sample("y", dist.Bernoulli(logits=logits), obs=y)
