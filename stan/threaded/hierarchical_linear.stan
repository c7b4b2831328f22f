functions {
  // Log likelihood of homes start..end; reduce_sum hands over y[start:end] as y_slice.
  real partial_sum_lpdf(array[] real y_slice, int start, int end, array[] int county, vector x,
                        vector alpha, vector beta, real sigma_y) {
    array[end - start + 1] int c = county[start:end];
    return normal_lupdf(y_slice | fma(beta[c], x[start:end], alpha[c]), sigma_y);  // alpha[c] + beta[c] .* x, fused
  }
}
data {
  int<lower=1> N;  // homes
  int<lower=2> J;  // counties
  array[N] int<lower=1, upper=J> county;
  vector[N] x;  // 1 when measured on the first floor
  vector[N] y;  // log radon
  int<lower=1> grainsize;  // reduce_sum slice size hint; 1 lets the scheduler choose
}
transformed data {
  // reduce_sum slices an array, not a vector.
  array[N] real y_array = to_array_1d(y);
}
parameters {
  real mu_alpha;
  real<lower=0> sigma_alpha;
  vector[J] alpha_raw;
  real mu_beta;
  real<lower=0> sigma_beta;
  vector[J] beta_raw;
  real<lower=0> sigma_y;
}
model {
  // Built once here and shared with every slice, rather than rebuilt per slice.
  vector[J] alpha = mu_alpha + sigma_alpha * alpha_raw;
  vector[J] beta = mu_beta + sigma_beta * beta_raw;
  mu_alpha ~ normal(0, 10);
  sigma_alpha ~ std_normal();
  alpha_raw ~ std_normal();
  mu_beta ~ normal(0, 10);
  sigma_beta ~ std_normal();
  beta_raw ~ std_normal();
  sigma_y ~ std_normal();
  // _lupdf: drop constants, like the serial program's `~`.
  target += reduce_sum(partial_sum_lupdf, y_array, grainsize, county, x, alpha, beta, sigma_y);
}
