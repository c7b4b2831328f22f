data {
  int<lower=1> N;  // observations without a label
  int<lower=1> K;  // components
  vector[N] y;
  int<lower=0> N_labelled;  // observations with their component's label
  vector[N_labelled] y_labelled;
  array[N_labelled] int<lower=1, upper=K> z_labelled;
  vector[K] labelled_centre;  // each component's labelled observations' mean (0 where it has none)
}
transformed data {
  matrix[N, 3] powers = append_col(append_col(square(y), y), rep_vector(1, N));  // [y^2, y, 1]
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
  // log w[k] + log normal(y[n] | mu[k], sigma[k]) (less its constant), the square expanded:
  // -y^2 / (2 sigma^2) + y mu / sigma^2 + log w - log sigma - mu^2 / (2 sigma^2), so all N x K terms come from one
  // product of the data's [y^2, y, 1] (N x 3) and 3 x K coefficients: no N-sized operation per component
  vector[K] precision = inv_square(sigma);
  matrix[N, K] log_terms = powers * append_row(append_row(-0.5 * precision', (mu .* precision)'),
                                               (log(w) - log(sigma) - 0.5 * square(mu) .* precision)');
  w ~ dirichlet(rep_vector(4, K));
  mu_offset ~ normal(-labelled_centre, 5);  // mu ~ normal(0, 5)
  sigma ~ lognormal(0, 1);
  z_labelled ~ categorical(w);
  y_labelled ~ normal(mu[z_labelled], sigma[z_labelled]);
  for (n in 1:N) {
    target += log_sum_exp(log_terms[n]);
  }
}
