data {
  int<lower=1> N;  // answers
  int<lower=1> S;  // students
  int<lower=1> Q;  // questions
  array[N] int<lower=1, upper=S> student;
  array[N] int<lower=1, upper=Q> question;
  array[N] int<lower=0, upper=1> correct;  // 1 when the student answered the question correctly
}
parameters {
  real mean_student_ability;
  // centered_student_ability = its mean + deviations that sum to zero; question_difficulty likewise. The answers
  // identify abilities less difficulties only: a common shift of both is left to the priors, and here it is a
  // few scalars instead of a direction through all 500 of them.
  real centered_ability_mean;
  sum_to_zero_vector[S] centered_ability_deviation;
  real question_difficulty_mean;
  sum_to_zero_vector[Q] question_difficulty_deviation;
}
model {
  // The target's priors, centered_student_ability ~ std_normal() and question_difficulty ~ std_normal(), in these
  // coordinates: |x|^2 = n mean(x)^2 + |x - mean(x)|^2 (a linear map: constant Jacobian).
  mean_student_ability ~ normal(0.75, 1);
  centered_ability_mean ~ normal(0, inv_sqrt(S));
  centered_ability_deviation ~ std_normal();
  question_difficulty_mean ~ normal(0, inv_sqrt(Q));
  question_difficulty_deviation ~ std_normal();
  {
    // the scalars folded into the S abilities once, so one subtraction an answer
    vector[S] ability = (mean_student_ability + centered_ability_mean - question_difficulty_mean)
                        + centered_ability_deviation;
    correct ~ bernoulli_logit(ability[student] - question_difficulty_deviation[question]);
  }
}
generated quantities {
  // the target's own parameters
  vector[S] centered_student_ability = centered_ability_mean + centered_ability_deviation;
  vector[Q] question_difficulty = question_difficulty_mean + question_difficulty_deviation;
}
