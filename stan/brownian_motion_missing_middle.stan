data {
  int<lower=2> T;  // time steps
  int<lower=0, upper=T> N_obs;  // observed steps
  array[N_obs] int<lower=1, upper=T> obs_t;  // their indices
  vector[N_obs] y_obs;  // their noisy locations
  real<lower=0> innovation_noise_scale;
  real<lower=0> observation_noise_scale;
}
parameters {
  vector[T] locs;  // latent Brownian motion
}
model {
  locs[1] ~ normal(0, innovation_noise_scale);
  locs[2:T] ~ normal(locs[1:(T - 1)], innovation_noise_scale);
  y_obs ~ normal(locs[obs_t], observation_noise_scale);
}
