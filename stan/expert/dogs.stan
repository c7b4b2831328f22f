// posteriordb's dogs (stan/dogs.stan, as published) as a Stan expert writes it: the counts of earlier avoidances
// and shocks are data, so they are computed once in transformed data (the published program declares them
// transformed parameters: recomputed, stored and autodiffed every gradient), and the 750 Bernoulli-logit terms
// are one bernoulli_logit_glm call (Stan's fused GLM: one pass, analytic gradient). The same posterior (density
// tested against the NumPyro port, as the published program is). The published program's per-draw n_avoid,
// n_shock and p are not stored; the NumPyro port still stores them (deterministic sites, computed after sampling),
// which can only slow the JAX side of this pairing.
data {
  int<lower=0> n_dogs;
  int<lower=0> n_trials;
  array[n_dogs, n_trials] int<lower=0, upper=1> y;
}
transformed data {
  int n = n_dogs * n_trials;
  array[n] int y_flat = to_array_1d(y); // row-major: dog by dog
  matrix[n, 2] x; // avoidances and shocks before each trial, in y_flat's order
  for (j in 1 : n_dogs) {
    real avoided = 0;
    real shocked = 0;
    for (t in 1 : n_trials) {
      x[(j - 1) * n_trials + t] = [avoided, shocked];
      avoided += 1 - y[j, t];
      shocked += y[j, t];
    }
  }
}
parameters {
  vector[3] beta;
}
model {
  beta ~ normal(0, 100);
  y_flat ~ bernoulli_logit_glm(x, beta[1], beta[2 : 3]);
}
