// A Bayesian neural network for regression, as NumPyro's example writes it (examples/bnn.py): two tanh hidden
// layers of H units, standard normal priors on every weight, the inputs carrying their own constant column (so no
// biases), and a gamma prior on the noise's precision. Generated quantities: the network's output at held-out
// inputs and the likelihood of the held-out observations there, which the gates judge (the weights themselves swap
// and flip between equivalent modes).
data {
  int<lower=1> N; // training observations
  int<lower=1> D; // input features (powers of x, the constant included)
  int<lower=1> H; // hidden units per layer
  matrix[N, D] X;
  vector[N] y;
  int<lower=1> N_test; // held-out observations
  matrix[N_test, D] X_test;
  vector[N_test] y_test;
}
parameters {
  matrix[D, H] w1;
  matrix[H, H] w2;
  vector[H] w3;
  real<lower=0> prec_obs;
}
model {
  to_vector(w1) ~ std_normal();
  to_vector(w2) ~ std_normal();
  w3 ~ std_normal();
  prec_obs ~ gamma(3, 1);
  y ~ normal(tanh(tanh(X * w1) * w2) * w3, inv_sqrt(prec_obs));
}
generated quantities {
  vector[N_test] mu_test = tanh(tanh(X_test * w1) * w2) * w3;
  vector[N_test] lik_test;
  for (j in 1 : N_test) {
    lik_test[j] = exp(normal_lpdf(y_test[j] | mu_test[j], inv_sqrt(prec_obs)));
  }
}
