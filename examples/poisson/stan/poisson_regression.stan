data {
  int<lower=0> N;  // observations
  int<lower=1> K;  // predictors
  matrix[N, K] X;
  array[N] int<lower=0> y;  // counts
}
parameters {
  real alpha;  // intercept (log rate at X = 0)
  vector[K] beta;  // log rate ratios
}
model {
  alpha ~ normal(0, 2.5);
  beta ~ normal(0, 1);
  y ~ poisson_log_glm(X, alpha, beta);
}
