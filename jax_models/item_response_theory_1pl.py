import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def item_response_theory_1pl(N, S, Q, student, question, correct=None):
    mean_student_ability = numpyro.sample("mean_student_ability", dist.Normal(0.75, 1.0))
    # centered_student_ability = its mean + deviations that sum to zero; question_difficulty likewise. The answers
    # identify abilities less difficulties only: a common shift of both is left to the priors, and here it is a
    # few scalars instead of a direction through all 500 of them. The target's std_normal priors in these
    # coordinates: |x|^2 = n mean(x)^2 + |x - mean(x)|^2 (a linear map: constant Jacobian).
    centered_ability_mean = numpyro.sample("centered_ability_mean", dist.Normal(0.0, 1.0 / jnp.sqrt(S)))
    centered_ability_deviation = numpyro.sample("centered_ability_deviation", dist.ZeroSumNormal(1.0, event_shape=(S,)))
    question_difficulty_mean = numpyro.sample("question_difficulty_mean", dist.Normal(0.0, 1.0 / jnp.sqrt(Q)))
    question_difficulty_deviation = numpyro.sample(
        "question_difficulty_deviation", dist.ZeroSumNormal(1.0, event_shape=(Q,))
    )
    # the target's own parameters
    centered_student_ability = numpyro.deterministic(
        "centered_student_ability", centered_ability_mean + centered_ability_deviation
    )
    question_difficulty = numpyro.deterministic(
        "question_difficulty", question_difficulty_mean + question_difficulty_deviation
    )
    # the data block indexes students and questions from 1, as Stan does
    logits = mean_student_ability + centered_student_ability[student - 1] - question_difficulty[question - 1]
    with numpyro.plate("answers", N):
        numpyro.sample("correct", dist.Bernoulli(logits=logits), obs=correct)
