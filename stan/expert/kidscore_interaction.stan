// posteriordb's kidscore_interaction (stan/kidscore_interaction.stan, as published) as a Stan expert writes it: the
// predictors and their interaction (already transformed data there) are the columns of one matrix of transformed
// data and the 434 normal terms are one normal_id_glm call (Stan's fused GLM: one pass, analytic gradient) instead
// of a linear predictor built from four vector expressions on the autodiff tape. Measured by `stanjax check` at 2
// runs a side (2-core machine shared with other work): 0.0063 ms per gradient against the published form's 0.061.
// The same posterior (density tested against the NumPyro port, as the published program is).
data {
  int<lower=0> N;
  vector<lower=0, upper=200>[N] kid_score;
  vector<lower=0, upper=200>[N] mom_iq;
  vector<lower=0, upper=1>[N] mom_hs;
}
transformed data {
  matrix[N, 3] X = append_col(append_col(mom_hs, mom_iq), mom_hs .* mom_iq);
}
parameters {
  vector[4] beta;
  real<lower=0> sigma;
}
model {
  sigma ~ cauchy(0, 2.5);
  kid_score ~ normal_id_glm(X, beta[1], beta[2 : 4], sigma);
}
