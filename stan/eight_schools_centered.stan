data {
  int<lower=0> J;
  vector[J] y;
  vector<lower=0>[J] sigma;
}
parameters {
  real avg_effect;
  real log_stddev;
  vector[J] school_effects;
}
model {
  avg_effect ~ normal(0, 10);
  log_stddev ~ normal(5, 1);
  school_effects ~ normal(avg_effect, exp(log_stddev));
  y ~ normal(school_effects, sigma);
}
