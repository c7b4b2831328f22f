functions {
  // Log likelihood of observations start..end; reduce_sum hands over y[start:end] as y_slice.
  real partial_sum_lpmf(array[] int y_slice, int start, int end, matrix x, vector alpha, matrix beta) {
    // The GLM function on the rows of the slice, as in the serial program.
    return categorical_logit_glm_lupmf(y_slice | x[start:end], alpha, beta);
  }
}
data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=2> K;
  matrix[N, D] x;
  array[N] int<lower=1, upper=K> y;
  int<lower=1> grainsize;  // reduce_sum slice size hint; 1 lets the scheduler choose
}
parameters {
  vector[K] alpha;
  matrix[D, K] beta;
}
model {
  alpha ~ std_normal();
  to_vector(beta) ~ std_normal();
  // _lupmf: drop constants, like the serial program's `~`.
  target += reduce_sum(partial_sum_lupmf, y, grainsize, x, alpha, beta);
}
