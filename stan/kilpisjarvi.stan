// posteriordb's program kilpisjarvi: stan-dev/posteriordb at 28f8d3d: posterior_database/models/stan/kilpisjarvi.stan
// (BSD 3-Clause; models/posteriordb/SOURCE.md), one change: the intercept is sampled at the mean of x (alpha_c)
// and the published alpha, the intercept at x = 0, is a transformed parameter, alpha = alpha_c - beta * mean(x):
// a shear of unit Jacobian, so the same posterior, whose alpha and beta (x near 4,000) are otherwise correlated to
// within 1e-4 of -1 and need NUTS trees near the depth limit.
data {
  int<lower=0> N; // number of data points
  vector[N] x; //
  vector[N] y; //
  real xpred; // input location for prediction
  real pmualpha; // prior mean for alpha
  real psalpha; // prior std for alpha
  real pmubeta; // prior mean for beta
  real psbeta; // prior std for beta
}
transformed data {
  real x_mean = mean(x);
  vector[N] x_c = x - x_mean;
}
parameters {
  real alpha_c; // the line at x = mean(x)
  real beta;
  real<lower=0> sigma;
}
transformed parameters {
  real alpha = alpha_c - beta * x_mean;
}
model {
  alpha ~ normal(pmualpha, psalpha);
  beta ~ normal(pmubeta, psbeta);
  y ~ normal(alpha_c + beta * x_c, sigma);
}
