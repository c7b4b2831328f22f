// posteriordb's program arma11: stan-dev/posteriordb at 28f8d3d: posterior_database/models/stan/arma11.stan
// (BSD 3-Clause; models/posteriordb/SOURCE.md), one change: theta declared in (-1, 1), the invertible region,
// which holds all of posteriordb's reference draws; as published, chains started outside it stay stuck there.
// ARMA(1, 1)

data {
  int<lower=1> T; // number of observations
  array[T] real y; // observed outputs
}
parameters {
  real mu; // mean coefficient
  real phi; // autoregression coefficient
  real<lower=-1, upper=1> theta; // moving average coefficient (published: real theta)
  real<lower=0> sigma; // noise scale
}
model {
  vector[T] nu; // prediction for time t
  vector[T] err; // error for time t
  
  mu ~ normal(0, 10);
  phi ~ normal(0, 2);
  theta ~ normal(0, 2);
  sigma ~ cauchy(0, 2.5);
  
  nu[1] = mu + phi * mu; // assume err[0] == 0
  err[1] = y[1] - nu[1];
  for (t in 2 : T) {
    nu[t] = mu + phi * y[t - 1] + theta * err[t - 1];
    err[t] = y[t] - nu[t];
  }
  
  err ~ normal(0, sigma);
}


