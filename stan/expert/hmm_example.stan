// posteriordb's hmm_example (this repository's stan/hmm_example.stan: the forward algorithm by hmm_marginal) as
// a Stan expert writes it: each state's emission log densities are one vector expression, a row of log_omega,
// in place of N x K scalar normal_lpdf calls. The -log(sqrt(2 pi)) each normal density holds is left out of
// every emission: the same constant for every state at every step, so a constant of the posterior. The same
// posterior (density tested against the NumPyro port, as the published program is).
data {
  int<lower=0> N;
  int<lower=2, upper=2> K; // the priors below name the two states' locations
  array[N] real y;
}
transformed data {
  row_vector[N] y_row = to_row_vector(y);
}
parameters {
  simplex[K] theta1; // transition probabilities out of state 1
  simplex[K] theta2; // and out of state 2
  positive_ordered[K] mu;
}
model {
  matrix[K, K] Gamma = [theta1', theta2'];
  matrix[K, N] log_omega;
  for (k in 1 : K) {
    log_omega[k] = -0.5 * square(y_row - mu[k]);
  }
  target += normal_lpdf(mu[1] | 3, 1);
  target += normal_lpdf(mu[2] | 10, 1);
  target += hmm_marginal(log_omega, Gamma, rep_vector(1.0 / K, K));
}
