"""One-parameter logistic item-response theory as inference-gym's ``SyntheticItemResponseTheory`` target writes it
(400 students, 100 questions, 30012 answers), checked against the ground truth its authors made, not against a
reference of ours.

The target (``inference_gym/targets/item_response_theory.py``): ``mean_student_ability ~ normal(0.75, 1)``,
``centered_student_ability ~ normal(0, 1)`` per student, ``question_difficulty ~ normal(0, 1)`` per question, and
each answer ``correct ~ bernoulli_logit(mean_student_ability + centered_student_ability[student] -
question_difficulty[question])``. Its data are the answers in ``inference_gym/internal/datasets/
synthetic_item_response_theory.py``, read from the installed package at run time, and transformed as
``internal/data.py``'s ``synthetic_item_response_theory()`` does with the target's settings: shuffled by
``np.random.RandomState(1337)``, all of them training data (``train_fraction`` 1). The package's 0-based ids
become 1-based for Stan; the numbers of students and questions are the largest id + 1, as the target counts them.
The target scores the answers through a dense students x questions matrix and a mask; summing the Bernoulli terms
over the answers alone is the same density. The ground truth (``targets/ground_truth/
synthetic_item_response_theory.py``) gives the three quantities of the 'identity' transformation under the same
names here. The small, default and large presets are the target's data, checked against its ground truth; the tiny
preset (the test suite's) is the answers of the first 40 students to the first 20 questions, checked against a
reference of ours (``stanjax reference``), since the package has none for it.

Sampled as the target writes it, the answers identify abilities less difficulties only: a common shift of the
mean ability, all 400 offsets and all 100 difficulties is left to the priors, a direction through every coordinate,
and NUTS with a diagonal metric mixed it slowly (R-hat 1.03 on Stan with 4 x 1000 draws; sampling the abilities
themselves, centred on the mean, made it worse: R-hat 1.044, ESS 69). Both sides here split the offsets and the
difficulties each into its mean and deviations that sum to zero (Stan's ``sum_to_zero_vector``, NumPyro's
``ZeroSumNormal``), so the common shift lives in three scalars; the target's priors carry over exactly (|x|^2 =
n mean(x)^2 + |x - mean(x)|^2, a linear map with constant Jacobian), and the target's ``centered_student_ability``
and ``question_difficulty`` are reported as quantities (Stan generated quantities, NumPyro deterministic sites).
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError, gym

ID = "gym_irt-item_response_theory_1pl"
SHUFFLE_SEED = 1337  # internal/data.py: synthetic_item_response_theory(shuffle=True, shuffle_seed=1337)
TRAIN_FRACTION = 1.0  # the target keeps the training split only, and that is the whole data set


FULL = {"students": 400, "questions": 100}  # the target's data: the only size with a ground truth


def generate(seed: int, students: int, questions: int) -> dict:
    """The target's data, or (smaller presets, for tests) the answers of its first ``students`` students to its
    first ``questions`` questions; ``seed`` is accepted for the common interface and not used."""
    del seed
    if not (1 <= students <= FULL["students"] and 1 <= questions <= FULL["questions"]):
        raise SizeError(
            f"gym_irt needs 1 <= students <= {FULL['students']} and 1 <= questions <= "
            f"{FULL['questions']}, got {students}, {questions}"
        )
    source = gym.dataset("synthetic_item_response_theory")
    student_ids, question_ids, correct = source.STUDENT_IDS, source.QUESTION_IDS, source.CORRECT
    order = np.arange(student_ids.shape[0])
    np.random.RandomState(SHUFFLE_SEED).shuffle(order)
    n_train = int(student_ids.shape[0] * TRAIN_FRACTION)
    student_ids, question_ids, correct = (a[order][:n_train] for a in (student_ids, question_ids, correct))
    kept = (student_ids < students) & (question_ids < questions)
    student_ids, question_ids, correct = student_ids[kept], question_ids[kept], correct[kept]
    return {
        "N": int(kept.sum()),
        "S": int(student_ids.max()) + 1,
        "Q": int(question_ids.max()) + 1,
        "student": student_ids.astype(np.int64) + 1,  # Stan indexes from 1
        "question": question_ids.astype(np.int64) + 1,
        "correct": correct.astype(np.int64),
    }


SIZES = {"tiny": {"students": 40, "questions": 20}, "small": FULL, "default": FULL, "large": FULL}


def ground_truth(size: str) -> dict | None:
    """The package's ground truth for the target's data; None for the tiny subset (its reference is ours)."""
    if SIZES[size] != FULL:
        return None
    quantities = ("mean_student_ability", "centered_student_ability", "question_difficulty")
    return gym.ground_truth(
        "synthetic_item_response_theory", {name: name for name in quantities}, ID, size, generate(0, **FULL)
    )


SPEC = ModelSpec(
    id=ID,
    title="IRT 1PL (gym)",
    description="1PL item-response model, inference-gym's synthetic target (400 students, 100 questions); "
    "its ground truth as reference.",
    regime="gather-heavy likelihood: 30012 answers indexing 500 abilities and difficulties",
    parameters=(
        Parameter("mean_student_ability"),
        Parameter("centered_ability_mean"),
        Parameter("centered_ability_deviation", ("S",)),
        Parameter("question_difficulty_mean"),
        Parameter("question_difficulty_deviation", ("Q",)),
    ),
    quantities=(Parameter("centered_student_ability", ("S",)), Parameter("question_difficulty", ("Q",))),
    different_transforms=("centered_ability_deviation", "question_difficulty_deviation"),  # zero-sum: maps may differ
    sizes=SIZES,
    generate=generate,
    ground_truth=ground_truth,
)
