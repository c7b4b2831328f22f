// posteriordb's logmesquite_logvash (stan/logmesquite_logvash.stan, as published) as a Stan expert writes it: the
// log predictors (computed once in transformed data, as published) are one N x 5 matrix with group, and the
// likelihood is one normal_id_glm call (Stan's fused linear-regression density: one pass, analytic gradient) in
// place of five scalar-times-vector products and their sums on the autodiff tape every gradient. beta and sigma keep
// the published flat priors. The same posterior (density tested against the NumPyro port, as the published program
// is).
data {
  int<lower=0> N;
  vector[N] weight;
  vector[N] diam1;
  vector[N] diam2;
  vector[N] canopy_height;
  vector[N] total_height;
  vector[N] group;
}
transformed data {
  vector[N] log_weight = log(weight);
  matrix[N, 5] X = [log(diam1 .* diam2 .* canopy_height)', log(diam1 .* diam2)', log(diam1 ./ diam2)',
                    log(total_height)', group']';
}
parameters {
  vector[6] beta;
  real<lower=0> sigma;
}
model {
  log_weight ~ normal_id_glm(X, beta[1], beta[2 : 6], sigma);
}
