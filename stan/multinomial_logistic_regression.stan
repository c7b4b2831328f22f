data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=2> K;
  matrix[N, D] x;
  array[N] int<lower=1, upper=K> y;
}
parameters {
  vector[K] alpha;
  matrix[D, K] beta;
}
model {
  alpha ~ std_normal();
  to_vector(beta) ~ std_normal();
  y ~ categorical_logit_glm(x, alpha, beta);
}
