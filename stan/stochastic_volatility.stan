data {
  int<lower=2> T;
  vector[T] y;  // mean-corrected returns
}
transformed data {
  vector[T] y_squared = square(y);
}
parameters {
  real mu;  // mean log volatility
  real<lower=-1, upper=1> phi;  // persistence
  real<lower=0> sigma;  // innovation scale
  vector[T] h_std;  // standardised innovations (non-centred)
}
model {
  // log volatility, the AR(1) path built as deviations from mu: one fused multiply-add a step (not a subtraction,
  // a product and a sum), then one vectorised shift by mu
  vector[T] h = sigma * h_std;
  h[1] /= sqrt(1 - square(phi));
  for (t in 2:T) {
    h[t] = fma(phi, h[t - 1], h[t]);
  }
  h += mu;
  phi ~ uniform(-1, 1);
  sigma ~ std_normal();
  mu ~ normal(0, 5);
  h_std ~ std_normal();
  // y ~ normal(0, exp(h / 2)) less its constant, -(h + y^2 exp(-h)) / 2 a step: one exp a step, and neither
  // the scale's exp nor normal_lpdf's log of it
  target += -0.5 * (sum(h) + dot_product(y_squared, exp(-h)));
}
