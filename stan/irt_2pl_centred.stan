// The Stan User's Guide's multilevel 2PL item-response model ("Item-response theory models"), centred as written
// there; its gamma ~ lognormal(0, sigma_gamma), declared vector<lower=0>, is sampled on the log scale that Stan's
// lower=0 transform gives it, here declared as that log (the same density and sampler geometry), so that the
// gates judge the log discriminations, whose tails are light, rather than gamma, whose sd and mean have no MCSE
// where few answers leave a question's discrimination unbounded by its data
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
  vector[K] beta;  // difficulties - mu_beta, centred
  vector[K] log_gamma;  // log discriminations, centred
  real<lower=0> sigma_beta;
  real<lower=0> sigma_gamma;
}
model {
  vector[K] gamma = exp(log_gamma);  // discriminations
  alpha ~ std_normal();
  beta ~ normal(0, sigma_beta);
  log_gamma ~ normal(0, sigma_gamma);
  mu_beta ~ cauchy(0, 5);
  sigma_beta ~ cauchy(0, 5);
  sigma_gamma ~ cauchy(0, 5);
  y ~ bernoulli_logit(gamma[kk] .* (alpha[jj] - (beta[kk] + mu_beta)));
}
