// posteriordb's mesquite (stan/mesquite.stan, as published) as a Stan expert writes it: the six predictors are data,
// so they are one N x 6 matrix built once in transformed data, and the likelihood is one normal_id_glm call (Stan's
// fused linear-regression density: one pass, analytic gradient) in place of six scalar-times-vector products and
// their sums on the autodiff tape every gradient. beta and sigma keep the published flat priors. The same posterior
// (density tested against the NumPyro port, as the published program is).
data {
  int<lower=0> N;
  vector[N] weight;
  vector[N] diam1;
  vector[N] diam2;
  vector[N] canopy_height;
  vector[N] total_height;
  vector[N] density;
  vector[N] group;
}
transformed data {
  matrix[N, 6] X = [diam1', diam2', canopy_height', total_height', density', group']';
}
parameters {
  vector[7] beta;
  real<lower=0> sigma;
}
model {
  weight ~ normal_id_glm(X, beta[1], beta[2 : 7], sigma);
}
