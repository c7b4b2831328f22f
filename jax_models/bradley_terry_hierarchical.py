import numpyro
import numpyro.distributions as dist


def bradley_terry_hierarchical(n_players, n_matches, player1, player2, centered, y=None):
    sigma_player = numpyro.sample("sigma_player", dist.HalfNormal(1.0))
    # centered (the data's flag, chosen by the generator from matches per player): skill_raw are the skills
    # themselves; otherwise skill / sigma_player
    with numpyro.plate("players", n_players):
        skill_raw = numpyro.sample("skill_raw", dist.Normal(0.0, sigma_player if centered else 1.0))
    skill = skill_raw if centered else sigma_player * skill_raw
    with numpyro.plate("matches", n_matches):
        # the data block indexes players from 1, as Stan does
        numpyro.sample("y", dist.Bernoulli(logits=skill[player1 - 1] - skill[player2 - 1]), obs=y)
