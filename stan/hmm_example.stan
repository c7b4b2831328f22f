// posteriordb's program hmm_example, rewritten: stan-dev/posteriordb at 28f8d3d:
// posterior_database/models/stan/hmm_example.stan (BSD 3-Clause; models/posteriordb/SOURCE.md). The rewrite: the
// forward algorithm by hmm_marginal, the form the Stan User's Guide gives a hidden Markov model today, in place of
// the published program's hand-written loops. The same posterior: the same parameters, priors and likelihood (the
// published recursion starts from no initial distribution, this one from a uniform one: a constant, log K). The
// published Viterbi path (generated quantities) is left out, as the NumPyro port computes none.
// Two states; each emits normal(mu[k], 1); mu ordered and positive, which labels the states.

data {
  int<lower=0> N;
  int<lower=2, upper=2> K; // the priors below name the two states' locations
  array[N] real y;
}
parameters {
  simplex[K] theta1; // transition probabilities out of state 1
  simplex[K] theta2; // and out of state 2
  positive_ordered[K] mu;
}
model {
  matrix[K, K] Gamma = [theta1', theta2'];
  matrix[K, N] log_omega;
  for (n in 1 : N) {
    for (k in 1 : K) {
      log_omega[k, n] = normal_lpdf(y[n] | mu[k], 1);
    }
  }
  target += normal_lpdf(mu[1] | 3, 1);
  target += normal_lpdf(mu[2] | 10, 1);
  target += hmm_marginal(log_omega, Gamma, rep_vector(1.0 / K, K));
}
