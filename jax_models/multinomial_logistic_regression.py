import numpyro
import numpyro.distributions as dist


def multinomial_logistic_regression(N, D, K, x, y=None):
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0).expand([K]).to_event(1))
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([D, K]).to_event(2))
    with numpyro.plate("images", N):
        # the data block numbers classes from 1, as Stan does
        numpyro.sample("y", dist.Categorical(logits=alpha + x @ beta), obs=None if y is None else y - 1)
