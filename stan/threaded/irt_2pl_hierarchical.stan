functions {
  // Log likelihood of items start..end; reduce_sum hands over y[start:end] as y_slice.
  real partial_sum_lpmf(array[,] int y_slice, int start, int end, matrix abilities, vector a, vector b) {
    // Item i's logits -a[i] * b[i] + theta[j] * a[i]: a GLM with the abilities as its one covariate, as in the
    // serial program.
    real lp = 0;
    for (i in start:end) {
      lp += bernoulli_logit_glm_lupmf(y_slice[i - start + 1] | abilities, -a[i] * b[i], a[i:i]);
    }
    return lp;
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
  vector[I] b;  // difficulties, centred as in the serial program
  real<lower=0> sigma_a;
  vector[I] a_raw;  // log discriminations / sigma_a, as in the serial program
}
model {
  // Built once here and shared with every slice, rather than rebuilt per slice.
  vector[I] a = exp(sigma_a * a_raw);  // discriminations, lognormal(0, sigma_a)
  theta ~ std_normal();
  mu_b ~ normal(0, 2);
  sigma_b ~ std_normal();
  b ~ normal(mu_b, sigma_b);
  sigma_a ~ std_normal();
  a_raw ~ std_normal();
  // _lupmf: drop constants, like the serial program's `~`.
  target += reduce_sum(partial_sum_lupmf, y, grainsize, to_matrix(theta), a, b);
}
