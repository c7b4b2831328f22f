"""Hierarchical Bradley–Terry model on synthetic tennis matches (Ingram 2021), centred or non-centred by data size.

Where the skills are sampled centred or non-centred is the data's ``centered`` entry, set here in ``generate`` from
the matches each player plays on average (``2 * n_matches / n_players``; a resized data-size study point gets its
own), and read by both programs: ``skill_raw`` is the skills themselves where ``centered`` is 1, skill /
``sigma_player`` where it is 0. With few matches per player the population prior dominates each skill and the
centred skills form a funnel with ``sigma_player``; with many, each player's matches pin the skill down and the
non-centred ``skill_raw`` become a ridge along ``sigma_player`` (every ``skill_raw`` moves with 1 / ``sigma_player``).
Measured with NumPyro (4 chains, 1000 + 1000, min bulk ESS of non-centred vs centred, data seed 1):

| players | matches per player | non-centred | centred |
|---|---|---|---|
| 20 | 30 / 40 / 60 | 1222 / 1317 / 1121 | 196 (R-hat 1.030) / 468 (R-hat 1.021) / 1769 |
| 100 | 30 / 40 / 60 | 1510 / 1230 / 1373 | 1815 / 1958 / 2278 |
| 500 | 4 / 12 / 40 / 80 | 1062 / 1556 / 1242 / 815 | 152 (R-hat 1.021) / 699 / 2961 / 3078 |
| 500 | 400 | 225 (R-hat 1.026) | — |

Non-centred failed R-hat at 120 and 400 matches per player (500 players) on both engines in the data-size studies.
The crossover lies between 12 and 40 matches per player with 500 players and between 40 and 60 with 20 (fewer
players leave ``sigma_player`` less certain, which widens the centred funnel): centred from 50 matches per player.
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError

TRUE_SIGMA_PLAYER = 0.8
# Players' average matches (2 * n_matches / n_players) from which the skills are sampled centred.
CENTRED_FROM_MATCHES_PER_PLAYER = 50


def generate(seed: int, n_players: int, n_matches: int) -> dict:
    """Players meet at random, busier players more often; ``y = 1`` when player1 won."""
    if n_players < 2 or n_matches < 1:
        raise SizeError(f"tennis_synth needs n_players >= 2 and n_matches >= 1, got {n_players}, {n_matches}")
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, TRUE_SIGMA_PLAYER, size=n_players)
    activity = rng.lognormal(0.0, 1.0, size=n_players)
    activity /= activity.sum()
    player1 = rng.choice(n_players, size=n_matches, p=activity)
    offset = rng.integers(1, n_players, size=n_matches)  # never 0, so player2 != player1
    player2 = (player1 + offset) % n_players
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(skill[player1] - skill[player2]))))
    return {
        "n_players": n_players,
        "n_matches": n_matches,
        "player1": player1.astype(np.int64) + 1,  # Stan indexes from 1
        "player2": player2.astype(np.int64) + 1,
        "y": y.astype(np.int64),
        "centered": int(2 * n_matches >= CENTRED_FROM_MATCHES_PER_PLAYER * n_players),
    }


SPEC = ModelSpec(
    id="tennis_synth-bradley_terry_hierarchical",
    title="Bradley–Terry (tennis)",
    description="Hierarchical Bradley–Terry: player skills ~ normal(0, sigma_player), logit win model; skills "
    "non-centred below 50 matches per player, centred from there (the data's `centered` flag).",
    regime="gather-heavy likelihood; Ingram saw the GPU overtake the CPU above ~50k matches",
    parameters=(Parameter("sigma_player"), Parameter("skill_raw", ("n_players",))),
    sizes={
        "tiny": {"n_players": 20, "n_matches": 300},
        "small": {"n_players": 100, "n_matches": 2_000},
        "default": {"n_players": 500, "n_matches": 20_000},
        "large": {"n_players": 5_000, "n_matches": 200_000},
    },
    generate=generate,
    n_key="n_matches",
    studies=("data-size",),
    claims=("ingram",),
)
