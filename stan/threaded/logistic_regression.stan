functions {
  // Log likelihood of observations start..end; reduce_sum hands over y[start:end] as y_slice.
  real partial_sum_lpmf(array[] int y_slice, int start, int end, matrix X, real alpha, vector beta) {
    // The GLM function on the rows of the slice, as in the serial program.
    return bernoulli_logit_glm_lupmf(y_slice | X[start:end], alpha, beta);
  }
}
data {
  int<lower=0> N;
  int<lower=1> D;
  matrix[N, D] X;
  array[N] int<lower=0, upper=1> y;
  int<lower=1> grainsize;  // reduce_sum slice size hint; 1 lets the scheduler choose
}
parameters {
  real alpha;
  vector[D] beta;
}
model {
  alpha ~ std_normal();
  beta ~ std_normal();
  // _lupmf: drop constants, like the serial program's `~`.
  target += reduce_sum(partial_sum_lupmf, y, grainsize, X, alpha, beta);
}
