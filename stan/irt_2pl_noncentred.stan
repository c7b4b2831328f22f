// The Stan User's Guide's multilevel 2PL, non-centred: each question's difficulty and log discrimination in units
// of their scales, so that few answers a question leave no funnel
data {
  int<lower=1> J;  // students
  int<lower=1> K;  // questions
  int<lower=1> N;  // answers
  array[N] int<lower=1, upper=J> jj;  // student of answer n
  array[N] int<lower=1, upper=K> kk;  // question of answer n
  array[N] int<lower=0, upper=1> y;  // 1 when answer n is correct
}
parameters {
  real mu_beta;  // mean difficulty
  vector[J] alpha;  // abilities; their unit scale identifies the model
  vector[K] beta_raw;  // beta / sigma_beta
  vector[K] gamma_raw;  // log_gamma / sigma_gamma
  real<lower=0> sigma_beta;
  real<lower=0> sigma_gamma;
}
transformed parameters {
  vector[K] beta = sigma_beta * beta_raw;  // difficulties - mu_beta
  vector[K] log_gamma = sigma_gamma * gamma_raw;  // log discriminations
}
model {
  vector[K] gamma = exp(log_gamma);  // discriminations
  alpha ~ std_normal();
  beta_raw ~ std_normal();
  gamma_raw ~ std_normal();
  mu_beta ~ cauchy(0, 5);
  sigma_beta ~ cauchy(0, 5);
  sigma_gamma ~ cauchy(0, 5);
  y ~ bernoulli_logit(gamma[kk] .* (alpha[jj] - (beta[kk] + mu_beta)));
}
