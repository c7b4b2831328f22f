// posteriordb's program blr, unchanged: stan-dev/posteriordb at 28f8d3d: posterior_database/models/stan/blr.stan
// (BSD 3-Clause; models/posteriordb/SOURCE.md)
data {
  int<lower=0> N;
  int<lower=0> D;
  matrix[N, D] X;
  vector[N] y;
}
parameters {
  vector[D] beta;
  real<lower=0> sigma;
}
model {
  // prior
  target += normal_lpdf(beta | 0, 10);
  target += normal_lpdf(sigma | 0, 10);
  // likelihood
  target += normal_lpdf(y | X * beta, sigma);
}


