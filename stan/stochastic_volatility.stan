data {
  int<lower=2> T;
  vector[T] y;  // mean-corrected returns
}
parameters {
  real mu;  // mean log volatility
  real<lower=-1, upper=1> phi;  // persistence
  real<lower=0> sigma;  // innovation scale
  vector[T] h_std;  // standardised innovations (non-centred)
}
model {
  vector[T] h = sigma * h_std;  // log volatility
  h[1] /= sqrt(1 - square(phi));
  h += mu;
  for (t in 2:T) {
    h[t] += phi * (h[t - 1] - mu);
  }
  phi ~ uniform(-1, 1);
  sigma ~ std_normal();
  mu ~ normal(0, 5);
  h_std ~ std_normal();
  y ~ normal(0, exp(h / 2));
}
