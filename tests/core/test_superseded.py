"""results/SUPERSEDED: which records a known bug superseded, and a malformed file refused in one line."""

import pytest
from msgspec.structs import replace

from stanjax.models import ROOT, UsageError
from stanjax.runner.core import records, superseded
from stanjax.runner.core.run_measures import MachineLoad

FIXTURE = ROOT / "tests" / "fixtures" / "tiny_repeats2.jsonl"
QUIET = MachineLoad(other_processes_cores=0.05, load_average_start=0.2, load_average_end=0.2, loaded=False)


@pytest.fixture(scope="module")
def runs():
    return [replace(r, load=QUIET, isa="native") for r in records.read(FIXTURE)]


def load(tmp_path, text: str):
    path = tmp_path / "SUPERSEDED"
    path.write_text(text)
    return superseded.load(path)


def test_an_entry_selects_campaigns_narrowed_by_engine_and_model(tmp_path, runs):
    campaign, model_id = runs[0].campaign_id, runs[0].model_id
    entries = load(
        tmp_path,
        f'''
[[superseded]]
why = "a clock bug"
fixed_by = "abc1234"
campaigns = ["{campaign}"]
engines = ["numpyro"]
models = ["{model_id}"]
''',
    )
    covered = [r for r in runs if superseded.reason(r, entries)]
    assert covered and all(r.engine == "numpyro" and r.model_id == model_id for r in covered)
    assert len(covered) == sum(r.engine == "numpyro" and r.model_id == model_id for r in runs)
    assert superseded.reason(covered[0], entries) == "a clock bug (fixed by abc1234)"
    assert superseded.left_out(covered[0], entries) == "superseded"
    assert superseded.reason(replace(covered[0], campaign_id="another"), entries) is None


def test_commits_narrow_an_entry_to_the_records_made_at_them(tmp_path, runs):
    """A campaign grown with --resume across a fix: only its records made before the fix are superseded."""
    campaign, made_at = runs[0].campaign_id, runs[0].provenance.git_commit
    assert made_at and len(made_at) == 40
    [entry] = load(
        tmp_path,
        f'[[superseded]]\nwhy = "w"\nfixed_by = "f"\ncampaigns = ["{campaign}"]\ncommits = ["{made_at[:7]}"]\n',
    )
    assert entry.covers(runs[0]) and entry.selector == f"campaigns {campaign}; made at commits {made_at[:7]}"
    later = replace(runs[0], provenance=replace(runs[0].provenance, git_commit="f" * 40))
    assert not entry.covers(later)
    assert not entry.covers(replace(runs[0], provenance=replace(runs[0].provenance, git_commit=None)))


def test_a_campaign_folder_stands_for_its_records_campaign_ids(tmp_path, runs):
    folder = tmp_path / "machine" / "campaign"
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text(FIXTURE.read_text())
    [entry] = load(tmp_path, '[[superseded]]\nwhy = "w"\nfixed_by = "f"\ncampaigns = ["machine/campaign"]\n')
    assert entry.campaigns == {r.campaign_id for r in runs} and all(entry.covers(r) for r in runs)
    assert entry.selector == "campaigns machine/campaign"


def test_the_isa_rule_covers_stan_runs_that_name_no_isa():
    [entry] = [e for e in superseded.load() if e.rule == "isa-unrecorded-stan"]
    old = records.read(FIXTURE)
    assert {r.engine for r in old if entry.covers(r)} == {"stan"}
    assert not any(entry.covers(replace(r, isa="native")) for r in old)


def test_the_noncentred_irt_rule_covers_the_runs_of_the_old_programs_only():
    [entry] = [e for e in superseded.load() if e.rule == "irt-2pl-noncentred"]
    every = records.read(ROOT / "results")
    runs = [r for r in every if r.model_id == "irt_synth-irt_2pl_hierarchical" and r.status == "ok"]
    old = [r for r in runs if "b_raw[1]" in r.metrics.posterior_mean]  # the non-centred programs' runs
    centred = [r for r in runs if "b[1]" in r.metrics.posterior_mean]  # the EPYC's default campaign, from b1ec162
    assert old and centred and len(old) + len(centred) == len(runs)
    assert all(entry.covers(r) for r in old) and not any(entry.covers(r) for r in centred)
    assert not any(entry.covers(r) for r in every if r.model_id != "irt_synth-irt_2pl_hierarchical")


def test_the_free_biases_rule_covers_matrix_factorisation_runs_whose_biases_do_not_sum_to_zero():
    [entry] = [e for e in superseded.load() if e.rule == "movielens-free-biases"]
    every = records.read(ROOT / "results")
    old = [
        r
        for r in every
        if r.model_id == "movielens_synth-matrix_factorization" and not superseded.biases_sum_to_zero(r)
    ]
    assert len(old) >= 4 and all(entry.covers(r) for r in old)  # at least the EPYC's two default blocks
    assert not any(entry.covers(r) for r in every if r.model_id != "movielens_synth-matrix_factorization")
    # a run of the sum-to-zero programs: its means sum to zero to rounding
    free = next(r for r in old if r.metrics.posterior_mean)
    means = {name: v for name, v in free.metrics.posterior_mean.items() if name.startswith("b_user[")}
    centre = sum(means.values()) / len(means)
    zero_sum = {**free.metrics.posterior_mean, **{name: v - centre for name, v in means.items()}}
    assert not entry.covers(replace(free, metrics=replace(free.metrics, posterior_mean=zero_sum)))


def test_the_committed_file_supersedes_the_gp_runs_made_before_the_openblas_fix():
    """xeon-2core's NumPyro GP runs (OpenBLAS's default threads: NumPyro-CPU 10.1× slower than Stan-CPU) are covered;
    the EPYC's, made after 634c972, are not (by that entry)."""
    entries = superseded.load()
    [gp] = [e for e in entries if "gp_synth-gp_regression" in e.models and e.fixed_by == "634c972"]
    runs = [r for r in records.read(ROOT / "results") if r.model_id == "gp_synth-gp_regression"]
    assert {r.machine for r in runs if gp.covers(r)} == {"xeon-2core"}
    assert all(r.engine == "numpyro" for r in runs if gp.covers(r))
    assert not any(gp.covers(r) for r in runs if r.machine == "epyc-2core")
    # the EPYC's one GP run that --resume put into the Xeon's default campaign (fixed by 91e663e), and only it
    [elsewhere] = [e for e in entries if "gp_synth-gp_regression" in e.models and e.fixed_by == "91e663e"]
    covered = [r for r in runs if elsewhere.covers(r)]
    assert [(r.machine, r.engine) for r in covered] == [("epyc-2core", "stan")]
    assert {e.fixed_by for e in entries} >= {"634c972", "e9f3478", "8f7af6b"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[superseded]\n", "not valid TOML"),
        ("[other]\nx = 1\n", "only [[superseded]] entries"),
        ('[[superseded]]\nfixed_by = "f"\ncampaigns = ["c"]\n', "entry 1: needs why"),
        ('[[superseded]]\nwhy = "w"\ncampaigns = ["c"]\n', "entry 1: needs fixed_by"),
        ('[[superseded]]\nwhy = "w"\nfixed_by = "f"\n', "entry 1: needs exactly one selector"),
        (
            '[[superseded]]\nwhy = "w"\nfixed_by = "f"\ncampaigns = ["c"]\nrule = "isa-unrecorded-stan"\n',
            "needs exactly one selector",
        ),
        ('[[superseded]]\nwhy = "w"\nfixed_by = "f"\ncampaigns = []\n', "campaigns must be a non-empty list"),
        ('[[superseded]]\nwhy = "w"\nfixed_by = "f"\ncampaigns = ["c"]\nengine = ["stan"]\n', "unknown key(s) engine"),
        ('[[superseded]]\nwhy = "w"\nfixed_by = "f"\nrule = "no-such-rule"\n', "unknown rule 'no-such-rule'"),
        (
            '[[superseded]]\nwhy = "w"\nfixed_by = "f"\ncampaigns = ["c"]\ncommits = ["HEAD"]\n',
            "commits must be commit",
        ),
        (
            '[[superseded]]\nwhy = "w"\nfixed_by = "f"\nrule = "isa-unrecorded-stan"\ncommits = ["abcdef0"]\n',
            "a rule takes no engines, models or commits",
        ),
        (
            '[[superseded]]\nwhy = "w"\nfixed_by = "f"\ncampaigns = ["m/missing"]\n',
            "campaign folder 'm/missing' holds no",
        ),
        (
            '[[superseded]]\nwhy = "w"\nfixed_by = "f"\ncampaigns = ["c"]\n[[superseded]]\nwhy = ""\nfixed_by = "f"\n'
            'campaigns = ["c"]\n',
            "entry 2: needs why",
        ),
    ],
)
def test_a_malformed_file_is_refused_in_one_line(tmp_path, text, message):
    with pytest.raises(UsageError) as error:
        load(tmp_path, text)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith(str(tmp_path / "SUPERSEDED"))
