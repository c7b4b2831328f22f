// posteriordb's program logearn_height, unchanged: stan-dev/posteriordb at 28f8d3d: posterior_database/models/stan/logearn_height.stan
// (BSD 3-Clause; models/posteriordb/SOURCE.md)
data {
  int<lower=0> N;
  vector[N] earn;
  vector[N] height;
}
transformed data {
  // log transformation
  vector[N] log_earn;
  log_earn = log(earn);
}
parameters {
  vector[2] beta;
  real<lower=0> sigma;
}
model {
  log_earn ~ normal(beta[1] + beta[2] * height, sigma);
}


