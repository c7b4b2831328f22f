import numpyro
import numpyro.distributions as dist


def brownian_motion_missing_middle(T, N_obs, obs_t, innovation_noise_scale, observation_noise_scale, y_obs=None):
    # locs[0] ~ normal(0, s), locs[t] ~ normal(locs[t - 1], s): NumPyro's Gaussian random walk
    locs = numpyro.sample("locs", dist.GaussianRandomWalk(innovation_noise_scale, num_steps=T))
    with numpyro.plate("observed", N_obs):
        numpyro.sample("y_obs", dist.Normal(locs[obs_t - 1], observation_noise_scale), obs=y_obs)
