data {
  int<lower=2> n_players;
  int<lower=0> n_matches;
  array[n_matches] int<lower=1, upper=n_players> player1;
  array[n_matches] int<lower=1, upper=n_players> player2;
  array[n_matches] int<lower=0, upper=1> y;  // 1 when player1 won
  // 1: sample the skills themselves (many matches per player); 0: skill / sigma_player (few). Set by the generator.
  int<lower=0, upper=1> centered;
}
parameters {
  real<lower=0> sigma_player;
  vector[n_players] skill_raw;  // centred: the skills; non-centred: skill / sigma_player
}
model {
  vector[n_players] skill = centered ? skill_raw : sigma_player * skill_raw;
  sigma_player ~ std_normal();
  skill_raw ~ normal(0, centered ? sigma_player : 1);
  y ~ bernoulli_logit(skill[player1] - skill[player2]);
}
