data {
  int<lower=1> I;  // items
  int<lower=1> J;  // students
  array[I, J] int<lower=0, upper=1> y;  // 1 when student j answered item i correctly
}
transformed data {
  array[I * J] int y_flat = to_array_1d(y);  // row-major: item by item
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
  vector[I] a = exp(sigma_a * a_raw);  // discriminations, lognormal(0, sigma_a)
  vector[I] b = mu_b + sigma_b * b_raw;  // difficulties, normal(mu_b, sigma_b)
  theta ~ std_normal();
  mu_b ~ normal(0, 2);
  sigma_b ~ std_normal();
  b_raw ~ std_normal();
  sigma_a ~ std_normal();
  a_raw ~ std_normal();
  // J x I logits a[i] * (theta[j] - b[i]); column-major flattening is y_flat's row-major order
  y_flat ~ bernoulli_logit(to_vector(theta * a' - rep_matrix((a .* b)', J)));
}
