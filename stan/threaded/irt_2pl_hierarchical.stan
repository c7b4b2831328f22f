functions {
  // Log likelihood of items start..end; reduce_sum hands over y[start:end] as y_slice.
  real partial_sum_lpmf(array[,] int y_slice, int start, int end, vector theta, vector a, vector b) {
    vector[end - start + 1] a_slice = a[start:end];
    // The slice's J x (end - start + 1) logits a[i] * theta[j] - a[i] * b[i], as in the serial program. Their
    // column-major flattening runs student by student within each item: the row-major order of y_slice.
    return bernoulli_logit_lupmf(to_array_1d(y_slice)
                                 | to_vector(theta * a_slice' - rep_matrix((a_slice .* b[start:end])', rows(theta))));
  }
}
data {
  int<lower=1> I;  // items
  int<lower=1> J;  // students
  array[I, J] int<lower=0, upper=1> y;  // 1 when student j answered item i correctly
  int<lower=1> grainsize;  // reduce_sum slice size hint; 1 lets the scheduler choose
}
parameters {
  vector[J] theta;  // abilities; their unit scale identifies the model
  real mu_b;
  real<lower=0> sigma_b;
  vector[I] b_raw;
  real<lower=0> sigma_a;
  vector[I] a_raw;
}
model {
  // Built once here and shared with every slice, rather than rebuilt per slice.
  vector[I] a = exp(sigma_a * a_raw);  // discriminations, lognormal(0, sigma_a)
  vector[I] b = mu_b + sigma_b * b_raw;  // difficulties, normal(mu_b, sigma_b)
  theta ~ std_normal();
  mu_b ~ normal(0, 2);
  sigma_b ~ std_normal();
  b_raw ~ std_normal();
  sigma_a ~ std_normal();
  a_raw ~ std_normal();
  // _lupmf: drop constants, like the serial program's `~`.
  target += reduce_sum(partial_sum_lupmf, y, grainsize, theta, a, b);
}
