data {
  int<lower=1> N;
  int<lower=1> K;  // components
  vector[N] y;
}
parameters {
  simplex[K] w;  // mixing weights
  ordered[K] mu;  // locations, ordered to identify the components
  vector<lower=0>[K] sigma;  // scales
}
model {
  matrix[N, K] log_terms;  // log w[k] + log normal(y[n] | mu[k], sigma[k]), one column per component
  for (k in 1:K) {
    log_terms[:, k] = log(w[k]) - log(sigma[k]) - 0.5 * square((y - mu[k]) / sigma[k]);
  }
  w ~ dirichlet(rep_vector(4, K));
  mu ~ normal(0, 5);
  sigma ~ lognormal(0, 1);
  for (n in 1:N) {
    target += log_sum_exp(log_terms[n]);
  }
}
