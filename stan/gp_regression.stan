data {
  int<lower=1> N;
  array[N] real x;
  vector[N] y;
}
parameters {
  real<lower=0> rho;  // length scale
  real<lower=0> alpha;  // amplitude
  real<lower=0> sigma;  // noise
}
model {
  matrix[N, N] L = cholesky_decompose(add_diag(gp_exp_quad_cov(x, alpha, rho), square(sigma)));
  rho ~ inv_gamma(5, 5);
  alpha ~ std_normal();
  sigma ~ std_normal();
  y ~ multi_normal_cholesky(rep_vector(0, N), L);
}
