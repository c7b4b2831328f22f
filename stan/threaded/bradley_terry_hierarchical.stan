functions {
  // Log likelihood of matches start..end; reduce_sum hands over y[start:end] as y_slice.
  real partial_sum_lpmf(array[] int y_slice, int start, int end, array[] int player1,
                        array[] int player2, vector skill) {
    return bernoulli_logit_lupmf(y_slice | skill[player1[start:end]] - skill[player2[start:end]]);
  }
}
data {
  int<lower=2> n_players;
  int<lower=0> n_matches;
  array[n_matches] int<lower=1, upper=n_players> player1;
  array[n_matches] int<lower=1, upper=n_players> player2;
  array[n_matches] int<lower=0, upper=1> y;  // 1 when player1 won
  // 1: sample the skills themselves (many matches per player); 0: skill / sigma_player (few). Set by the generator.
  int<lower=0, upper=1> centered;
  int<lower=1> grainsize;  // reduce_sum slice size hint; 1 lets the scheduler choose
}
parameters {
  real<lower=0> sigma_player;
  vector[n_players] skill_raw;  // centred: the skills; non-centred: skill / sigma_player
}
model {
  // Scaled once here and shared with every slice, rather than rescaled per slice.
  vector[n_players] skill = centered ? skill_raw : sigma_player * skill_raw;
  sigma_player ~ std_normal();
  skill_raw ~ normal(0, centered ? sigma_player : 1);
  // _lupmf: drop constants, like the serial program's `~`.
  target += reduce_sum(partial_sum_lupmf, y, grainsize, player1, player2, skill);
}
