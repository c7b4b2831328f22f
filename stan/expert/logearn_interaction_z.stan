// posteriordb's logearn_interaction_z (stan/logearn_interaction_z.stan, as published) as a Stan expert writes it:
// the published linear predictor, beta[1] + beta[2] * z_height + beta[3] * male + beta[4] * inter, puts six vectors
// of N = 1,192 autodiff variables on the tape every gradient before normal_lpdf reads them; here the predictors are
// one data matrix built once in transformed data, and the likelihood is one normal_id_glm call (Stan's fused GLM:
// one pass over the data, analytic gradient, one node on the tape). Measured (`stanjax run --suite tiny --engines
// stan --stan-programs model expert`, 3 paired repeats, 2-core machine under load 15-16): 0.195-0.258 ms per
// gradient published, 0.018-0.025 here. The same posterior (flat priors as published; density tested against the
// NumPyro port, as the published program is).
data {
  int<lower=0> N;
  vector[N] earn;
  vector[N] height;
  vector[N] male;
}
transformed data {
  vector[N] log_earn = log(earn); // log transformation
  vector[N] z_height = (height - mean(height)) / sd(height); // standardization
  matrix[N, 3] x = append_col(append_col(z_height, male), z_height .* male); // with the interaction
}
parameters {
  vector[4] beta;
  real<lower=0> sigma;
}
model {
  log_earn ~ normal_id_glm(x, beta[1], beta[2 : 4], sigma);
}
