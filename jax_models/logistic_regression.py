import numpyro
import numpyro.distributions as dist


def logistic_regression(N, D, X, y=None):
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0))
    with numpyro.plate("D", D):
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    with numpyro.plate("N", N):
        numpyro.sample("y", dist.Bernoulli(logits=alpha + X @ beta), obs=y)
