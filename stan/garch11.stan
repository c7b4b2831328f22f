// posteriordb's program garch11: stan-dev/posteriordb at 28f8d3d: posterior_database/models/stan/garch11.stan
// (BSD 3-Clause; models/posteriordb/SOURCE.md), one change: beta1 = (1 - alpha1) * beta1_share with beta1_share
// in (0, 1) and the log Jacobian of that scaling, so the posterior is the published one (flat on beta1 in
// (0, 1 - alpha1)) while no parameter's support depends on another, which NumPyro's MCMC needs.
data {
  int<lower=0> T;
  array[T] real y;
  real<lower=0> sigma1;
}
parameters {
  real mu;
  real<lower=0> alpha0;
  real<lower=0, upper=1> alpha1;
  real<lower=0, upper=1> beta1_share; // published: real<lower=0, upper=(1 - alpha1)> beta1
}
transformed parameters {
  real<lower=0, upper=(1 - alpha1)> beta1 = (1 - alpha1) * beta1_share;
}
model {
  array[T] real sigma;
  target += log1m(alpha1); // log |d beta1 / d beta1_share|
  sigma[1] = sigma1;
  for (t in 2 : T) {
    sigma[t] = sqrt(alpha0 + alpha1 * square(y[t - 1] - mu)
                    + beta1 * square(sigma[t - 1]));
  }
  
  y ~ normal(mu, sigma);
}
