"""NumPyro port of posteriordb's nes (stan/nes.stan): party identification on ideology, race, age group, education,
gender and income (one National Election Study year), flat priors."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def nes(N, partyid7, real_ideo, race_adj, educ1, gender, income, age_discrete):
    # the program declares no priors: beta and sigma are flat (improper) on their supports
    beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (9,)))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    # the program's transformed data: age groups 2, 3, 4 as indicators (group 1 is the baseline)
    age = (age_discrete[:, None] == jnp.array([2, 3, 4])).astype(real_ideo.dtype)
    X = jnp.concatenate(
        [real_ideo[:, None], race_adj[:, None], age, jnp.stack([educ1, gender, income], axis=-1)], axis=-1
    )
    with numpyro.plate("N", N):
        numpyro.sample("partyid7", dist.Normal(beta[0] + X @ beta[1:], sigma), obs=partyid7)
