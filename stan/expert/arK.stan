// posteriordb's arK (stan/arK.stan, as published) as a Stan expert writes it: the lagged observations are data,
// so the (T - K) x K matrix of lags is built once in transformed data (the published program loops over the K
// lags of every observation, one scalar product and one scalar normal statement at a time, each on the autodiff
// tape), and the T - K normal terms are one normal_id_glm call (Stan's fused linear-regression density: one pass,
// analytic gradient). The parameters are declared as published (beta an array). The same posterior (density
// tested against the NumPyro port, as the published program is).
data {
  int<lower=0> K;
  int<lower=0> T;
  array[T] real y;
}
transformed data {
  vector[T - K] y_now = to_vector(y[(K + 1) : T]);
  matrix[T - K, K] lags; // column k: y[t - k] for t = K + 1..T
  for (k in 1 : K) {
    lags[ : , k] = to_vector(y[(K + 1 - k) : (T - k)]);
  }
}
parameters {
  real alpha;
  array[K] real beta;
  real<lower=0> sigma;
}
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  sigma ~ cauchy(0, 2.5);
  y_now ~ normal_id_glm(lags, alpha, to_vector(beta), sigma);
}
