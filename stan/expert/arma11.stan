// posteriordb's arma11 (stan/arma11.stan, with theta in (-1, 1) as there) as a Stan expert writes it: the part
// of each prediction error that needs no recursion, y[t] - mu - phi * y[t - 1], is one vector expression, and
// the recursion err[t] = that - theta * err[t - 1] is the only loop left (the published loop also stores each
// prediction nu[t]). The same posterior (density tested against the NumPyro port, as the published program is).
data {
  int<lower=1> T; // number of observations
  array[T] real y; // observed outputs
}
transformed data {
  vector[T] y_vec = to_vector(y);
  vector[T - 1] y_lag = y_vec[1 : T - 1];
}
parameters {
  real mu; // mean coefficient
  real phi; // autoregression coefficient
  real<lower=-1, upper=1> theta; // moving average coefficient
  real<lower=0> sigma; // noise scale
}
model {
  vector[T] err;
  err[1] = y_vec[1] - mu - phi * mu; // assume err[0] == 0
  if (T > 1) {
    vector[T - 1] innovation = y_vec[2 : T] - mu - phi * y_lag;
    for (t in 2 : T) {
      err[t] = innovation[t - 1] - theta * err[t - 1];
    }
  }
  mu ~ normal(0, 10);
  phi ~ normal(0, 2);
  theta ~ normal(0, 2);
  sigma ~ cauchy(0, 2.5);
  err ~ normal(0, sigma);
}
