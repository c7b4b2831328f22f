data {
  int<lower=1> I;  // items
  int<lower=1> J;  // students
  array[I, J] int<lower=0, upper=1> y;  // 1 when student j answered item i correctly
}
parameters {
  vector[J] theta;  // abilities; their unit scale identifies the model
  real mu_b;
  real<lower=0> sigma_b;
  vector[I] b;  // difficulties, centred: every item is answered by all J students, so its data pin it down
  real<lower=0> sigma_a;
  vector[I] a_raw;  // log discriminations / sigma_a: non-centred, as sigma_a is small and poorly known
}
model {
  vector[I] a = exp(sigma_a * a_raw);  // discriminations, lognormal(0, sigma_a)
  theta ~ std_normal();
  mu_b ~ normal(0, 2);
  sigma_b ~ std_normal();
  b ~ normal(mu_b, sigma_b);
  sigma_a ~ std_normal();
  a_raw ~ std_normal();
  {
    // item i's logits a[i] * (theta[j] - b[i]) = -a[i] * b[i] + theta[j] * a[i]: a GLM with the abilities as its
    // one covariate, whose gradient the GLM computes in one pass, with no J x I matrix of logits built
    matrix[J, 1] abilities = to_matrix(theta);
    for (i in 1:I) {
      y[i] ~ bernoulli_logit_glm(abilities, -a[i] * b[i], a[i:i]);
    }
  }
}
