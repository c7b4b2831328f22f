data {
  int<lower=1> N;  // homes
  int<lower=2> J;  // counties
  array[N] int<lower=1, upper=J> county;
  vector[N] x;  // 1 when measured on the first floor
  vector[N] y;  // log radon
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
  vector[J] alpha = mu_alpha + sigma_alpha * alpha_raw;
  vector[J] beta = mu_beta + sigma_beta * beta_raw;
  mu_alpha ~ normal(0, 10);
  sigma_alpha ~ std_normal();
  alpha_raw ~ std_normal();
  mu_beta ~ normal(0, 10);
  sigma_beta ~ std_normal();
  beta_raw ~ std_normal();
  sigma_y ~ std_normal();
  y ~ normal(fma(beta[county], x, alpha[county]), sigma_y);  // alpha[county] + beta[county] .* x, fused
}
