data {
  int<lower=2> T;
  vector[T] centered_returns;  // daily returns minus their mean
}
transformed data {
  vector[T] squared_returns = square(centered_returns);
}
parameters {
  real<lower=-1, upper=1> persistence_of_volatility;
  real initial_log_volatility;  // log_volatility[1]: sampled in place of mean_log_volatility
  real<lower=0> white_noise_shock_scale;
  vector[T] log_volatility_std;  // the AR(1) innovations, standardised (non-centred)
}
transformed parameters {
  // log_volatility[1] = mean_log_volatility + its stationary scale x log_volatility_std[1]: the mean follows from
  // the first state and its innovation, a map of unit Jacobian
  real mean_log_volatility = initial_log_volatility
                             - white_noise_shock_scale * log_volatility_std[1]
                               / sqrt(1 - square(persistence_of_volatility));
  vector[T] log_volatility;
  {
    // the AR(1) path built once, as deviations from the mean: the scaled innovations in one vectorised
    // product, one fused multiply-add a step (not five operations), then one vectorised shift by the mean
    vector[T] deviation = white_noise_shock_scale * log_volatility_std;
    deviation[1] = initial_log_volatility - mean_log_volatility;
    for (t in 2:T) {
      deviation[t] = fma(persistence_of_volatility, deviation[t - 1], deviation[t]);
    }
    log_volatility = mean_log_volatility + deviation;
  }
}
model {
  (persistence_of_volatility + 1) / 2 ~ beta(20, 1.5);  // affine: its Jacobian is a constant
  // mean_log_volatility ~ cauchy(0, 5), written for the first state: mean + shift ~ cauchy(shift, 5)
  initial_log_volatility ~ cauchy(white_noise_shock_scale * log_volatility_std[1]
                                  / sqrt(1 - square(persistence_of_volatility)), 5);
  white_noise_shock_scale ~ cauchy(0, 2);
  log_volatility_std ~ std_normal();
  // centered_returns ~ normal(0, exp(log_volatility / 2)) less its constant, -(log_volatility + return^2
  // exp(-log_volatility)) / 2 a step: one exp a step, and neither the scale's exp nor normal_lpdf's log of it
  target += -0.5 * (sum(log_volatility) + dot_product(squared_returns, exp(-log_volatility)));
}
