// posteriordb's logmesquite_logva (stan/logmesquite_logva.stan, as published) as a Stan expert writes it: log
// canopy volume, log canopy area (computed once in transformed data, as published) and group are one N x 3 matrix,
// and the likelihood is one normal_id_glm call (Stan's fused linear-regression density: one pass, analytic
// gradient) in place of three scalar-times-vector products and their sums on the autodiff tape every gradient.
// beta and sigma keep the published flat priors. The same posterior (density tested against the NumPyro port, as
// the published program is).
data {
  int<lower=0> N;
  vector[N] weight;
  vector[N] diam1;
  vector[N] diam2;
  vector[N] canopy_height;
  vector[N] group;
}
transformed data {
  vector[N] log_weight = log(weight);
  matrix[N, 3] X = [log(diam1 .* diam2 .* canopy_height)', log(diam1 .* diam2)', group']';
}
parameters {
  vector[4] beta;
  real<lower=0> sigma;
}
model {
  log_weight ~ normal_id_glm(X, beta[1], beta[2 : 4], sigma);
}
