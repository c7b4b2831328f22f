import numpyro
import numpyro.distributions as dist


def eight_schools_noncentered(J, sigma, y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("J", J):
        theta_tilde = numpyro.sample("theta_tilde", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(mu + tau * theta_tilde, sigma), obs=y)
