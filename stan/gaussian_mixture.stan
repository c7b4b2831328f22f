data {
  int<lower=1> N;  // observations without a label
  int<lower=1> K;  // components
  vector[N] y;
  int<lower=0> N_labelled;  // observations with their component's label
  vector[N_labelled] y_labelled;
  array[N_labelled] int<lower=1, upper=K> z_labelled;
  vector[K] labelled_centre;  // each component's labelled observations' mean (0 where it has none)
}
parameters {
  simplex[K] w;  // mixing weights
  vector[K] mu_offset;  // locations measured from the labelled centres (unit Jacobian: a shift)
  vector<lower=0>[K] sigma;  // scales
}
transformed parameters {
  vector[K] mu = labelled_centre + mu_offset;  // locations (the labelled observations identify the components)
}
model {
  matrix[N, K] log_terms;  // log w[k] + log normal(y[n] | mu[k], sigma[k]), one column per component
  for (k in 1:K) {
    log_terms[:, k] = log(w[k]) - log(sigma[k]) - 0.5 * square((y - mu[k]) / sigma[k]);
  }
  w ~ dirichlet(rep_vector(4, K));
  mu_offset ~ normal(-labelled_centre, 5);  // mu ~ normal(0, 5)
  sigma ~ lognormal(0, 1);
  z_labelled ~ categorical(w);
  y_labelled ~ normal(mu[z_labelled], sigma[z_labelled]);
  for (n in 1:N) {
    target += log_sum_exp(log_terms[n]);
  }
}
