data {
  int<lower=0> N;
  int<lower=1> D;
  matrix[N, D] X;
  array[N] int<lower=0, upper=1> y;
}
parameters {
  real alpha;
  vector[D] beta;
}
model {
  alpha ~ std_normal();
  beta ~ std_normal();
  y ~ bernoulli_logit_glm(X, alpha, beta);
}
