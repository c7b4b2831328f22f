// posteriordb's gp_regr (stan/gp_regr.stan, as published) as a Stan expert writes it: sigma goes onto the kernel's
// diagonal with add_diag (N new autodiff nodes) in place of building diag_matrix(rep_vector(sigma, N)), an N x N
// matrix of nodes, and adding it to the kernel, N x N more, every gradient; the zero mean is data, made once in
// transformed data. As published, sigma itself (not its square) is the noise variance. The same posterior (density
// tested against the NumPyro port, as the published program is).
data {
  int<lower=1> N;
  array[N] real x;
  vector[N] y;
}
transformed data {
  vector[N] mu = rep_vector(0, N);
}
parameters {
  real<lower=0> rho;
  real<lower=0> alpha;
  real<lower=0> sigma;
}
model {
  matrix[N, N] L_cov = cholesky_decompose(add_diag(gp_exp_quad_cov(x, alpha, rho), sigma));

  rho ~ gamma(25, 4);
  alpha ~ normal(0, 2);
  sigma ~ normal(0, 1);

  y ~ multi_normal_cholesky(mu, L_cov);
}
