// posteriordb's program logearn_height_male, unchanged: stan-dev/posteriordb at 28f8d3d: posterior_database/models/stan/logearn_height_male.stan
// (BSD 3-Clause; models/posteriordb/SOURCE.md)
data {
  int<lower=0> N;
  vector[N] earn;
  vector[N] height;
  vector[N] male;
}
transformed data {
  // log transformation
  vector[N] log_earn;
  log_earn = log(earn);
}
parameters {
  vector[3] beta;
  real<lower=0> sigma;
}
model {
  log_earn ~ normal(beta[1] + beta[2] * height + beta[3] * male, sigma);
}


