// posteriordb's earn_height (stan/earn_height.stan, as published) as a Stan expert writes it: the published linear
// predictor, beta[1] + beta[2] * height, puts two vectors of N = 1,192 autodiff variables on the tape every gradient
// before normal_lpdf reads them; here the predictors are one data matrix built once in transformed data, and the
// likelihood is one normal_id_glm call (Stan's fused GLM: one pass over the data, analytic gradient, one node on the
// tape). The same rewrite measured about 10 times faster a gradient on logearn_height (one predictor; 0.011-0.013 ms
// against 0.092-0.129) and logearn_interaction_z (three; 0.018-0.025 against 0.195-0.258), `stanjax run --suite tiny
// --engines stan --stan-programs model expert`, 3 paired repeats each. The same posterior (flat priors as published;
// density tested against the NumPyro port, as the published program is).
data {
  int<lower=0> N;
  vector[N] earn;
  vector[N] height;
}
transformed data {
  matrix[N, 1] x = to_matrix(height);
}
parameters {
  vector[2] beta;
  real<lower=0> sigma;
}
model {
  earn ~ normal_id_glm(x, beta[1], beta[2 : 2], sigma);
}
