data {
  int<lower=2> n_players;
  int<lower=0> n_matches;
  array[n_matches] int<lower=1, upper=n_players> player1;
  array[n_matches] int<lower=1, upper=n_players> player2;
  array[n_matches] int<lower=0, upper=1> y;  // 1 when player1 won
}
parameters {
  real<lower=0> sigma_player;
  vector[n_players] skill_raw;
}
model {
  vector[n_players] skill = sigma_player * skill_raw;
  sigma_player ~ std_normal();
  skill_raw ~ std_normal();
  y ~ bernoulli_logit(skill[player1] - skill[player2]);
}
