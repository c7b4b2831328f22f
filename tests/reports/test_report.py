"""The report, built from committed records of real runs (tests/fixtures/make_fixtures.sh says how they were
made): self-contained, escaped, every headline number recomputable from the raw records.

The fixtures predate load records and ISAs; where a test needs ratios, its records are given a quiet machine and
a native build (``measured``), since a run with no load recorded enters no answer."""

import gzip
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from msgspec.structs import replace

from stanjax import models
from stanjax.models import ROOT
from stanjax.reports import stats
from stanjax.reports.build import build
from stanjax.reports.numbers import number, speed, times
from stanjax.runner.core import records, superseded
from stanjax.runner.core.engine_registry import label as engine_label
from stanjax.runner.core.run_measures import MachineLoad

FIXTURES = ROOT / "tests" / "fixtures"
RUNS = FIXTURES / "tiny_repeats2.jsonl"
STUDIES = FIXTURES / "studies_tiny"


QUIET = MachineLoad(other_processes_cores=0.05, load_average_start=0.2, load_average_end=0.2, loaded=False)
LOADED = MachineLoad(other_processes_cores=1.4, load_average_start=2.5, load_average_end=2.8, loaded=True)


def current_names(metrics):
    """Metrics as the current programs give them: the IRT-2PL's under the centred programs' names (b for b_raw:
    ``irt-2pl-noncentred`` supersedes a record that names b_raw), the matrix factorisation's biases summing to zero
    (``movielens-free-biases`` supersedes a record whose user biases do not)."""
    renamed = {
        field: {name.replace("b_raw", "b"): value for name, value in getattr(metrics, field).items()}
        for field in ("posterior_mean", "posterior_mcse", "posterior_sd", "posterior_mcse_sd", "posterior_khat")
    }
    means = renamed["posterior_mean"]
    for bias in ("b_user[", "b_movie["):
        names = [name for name in means if name.startswith(bias)]
        centre = sum(means[name] for name in names) / len(names) if names else 0.0
        means |= {name: means[name] - centre for name in names}
    return replace(metrics, **renamed)


def measured(recs):
    """Records as a current campaign writes them: a quiet machine recorded, both sides built for the host, the
    current programs' parameter names."""
    return [
        replace(r, load=QUIET, isa="native", metrics=current_names(r.metrics) if r.metrics else r.metrics) for r in recs
    ]


def five_blocks(recs):
    """The fixture's 2 blocks (its repeats) and 3 more: copies of block 1's runs with their own seeds, created
    later, NumPyro's ESS/s × (1 + block / 20), so the 5 block ratios differ."""
    more = [
        replace(
            r,
            repeat=block,
            run_id=f"{r.run_id}-block{block}",
            created=f"2026-12-0{block}T00:00:00+00:00",
            sampler_seed=r.sampler_seed + 1000 * block if r.sampler_seed is not None else None,
            metrics=replace(r.metrics, ess_per_s=r.metrics.ess_per_s * (1 + block / 20))
            if r.metrics and r.engine == "numpyro"
            else r.metrics,
        )
        for block in (2, 3, 4)
        for r in recs
        if r.repeat == 0
    ]
    return [*recs, *more]


@pytest.fixture(scope="module")
def fixture_records():
    return measured(records.read(RUNS))


def write(tmp_path, recs):
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(records.to_builtins(r)) + "\n" for r in recs))
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of the tiny suite (2 repeats) and the three tiny studies together."""
    results = tmp_path_factory.mktemp("results")
    write(results, measured(records.read(RUNS)))
    shutil.copytree(STUDIES, results / "studies")
    out = tmp_path_factory.mktemp("report")
    return build(results, out).read_text(), out


def built_today(recs):
    """The records with Stan's runs as the bundled Stan is built today (the fixture's were made by httpstan's build,
    whose ratios the first screen sets apart: issue 81)."""
    return [replace(r, front_end="bundled") if r.engine == "stan" else r for r in recs]


@pytest.fixture(scope="module")
def report_today(tmp_path_factory):
    """The tiny suite's report with its Stan runs as today's bundled Stan made them."""
    results = tmp_path_factory.mktemp("results")
    write(results, built_today(measured(records.read(RUNS))))
    out = tmp_path_factory.mktemp("report")
    return build(results, out).read_text(), out


# The report's pages beside each model's (reports/build.py's docstring says what each holds).
PAGES = (
    "index.html",
    "regimes.html",
    "why.html",
    "provenance.html",
    "pairings.html",
    "pairings-nutpie.html",
    "pairings-stan-side.html",
    "forests.html",
    "forests-nutpie.html",
    "forests-stan-side.html",
    "figures.html",
    "accuracy.html",
    "studies.html",
    "glossary.html",
)


def pages(index: Path) -> str:
    """Every page of a report: the index, the pages beside it and each model's page."""
    out = index.parent
    return "".join(p.read_text() for p in [*(out / n for n in PAGES), *sorted((out / "models").glob("*.html"))])


def pairings(index: Path) -> str:
    """The pairings' pages ("All pairings", "nutpie", "Stan side") of the report whose index is ``index``."""
    return "".join((index.parent / n).read_text() for n in PAGES if n.startswith("pairings"))


def regimes(index: Path) -> str:
    """The regime map's page of the report whose index is ``index``."""
    return (index.parent / "regimes.html").read_text()


def section(html: str, name: str) -> str:
    start = html.index(f'<section id="{name}"')
    return html[start : html.index("</section>", start)]


def test_every_id_on_a_page_is_its_own(report):
    """Each page's ids (its sections' and every figure's, matplotlib's groups included) name one element each: a
    figure's ids are prefixed by its own hash (figures.own_ids), so two figures on a page share none."""
    _, out = report
    for page in [*(out / n for n in PAGES), *(out / "models").glob("*.html")]:
        ids = Counter(re.findall(r' id="([^"]+)"', page.read_text()))
        repeated = sorted(i for i, n in ids.items() if n > 1)
        assert not repeated, (page.name, repeated[:5])
    figures = (out / "figures.html").read_text()
    assert figures.count("-figure-title") >= 1 and 'id="figure_1"' not in figures


def test_report_is_self_contained(report):
    html, out = report
    assert (out / "figures.html").read_text().count("<svg") >= 2  # each model's ratios and the bar chart, inline
    assert (out / "studies.html").read_text().count("<svg") >= 3  # the study figures
    # each pairing's forest plot is on its list's forests page, the pairings page links to it from the pairing's block
    for name, page in (
        ("headline", "forests.html"),
        ("nutpie", "forests-nutpie.html"),
        ("stan-side", "forests-stan-side.html"),
    ):
        listed, forests = section(pairings(out / "index.html"), name), (out / page).read_text()
        links = re.findall(r'<a href="([a-z-]+\.html)#(forest-[a-z0-9-]+)">', listed)
        assert (links or name != "headline") and "<svg" not in listed
        assert {linked for linked, _ in links} <= {page}
        for _, anchor in links:
            assert re.search(f'<h3 id="{anchor}">[^<]+</h3>\n<figure><svg', forests), anchor
    assert 'href="regimes.html#regime-map"' in html and '<section id="regime-map"' not in html
    assert 'href="why.html#why"' in html and '<section id="why"' in (out / "why.html").read_text()
    for name, page in (("headline", "pairings"), ("nutpie", "pairings-nutpie"), ("stan-side", "pairings-stan-side")):
        assert f'href="{page}.html#{name}"' in html and f'<section id="{name}"' in (out / f"{page}.html").read_text()
    sorting = re.compile(r"<script>\n// The per-model table sorted by a column.*?</script>", re.S)
    assert len(sorting.findall(html)) == 1  # the index's one script, inline: it sorts the table per model
    for page in [*(out / n for n in PAGES), *(out / "models").glob("*.html")]:
        # url(#id): an SVG clip path
        text = sorting.sub("", page.read_text())
        assert not re.search(r"<script|<link|<img|src=|@import|url\((?!#)|fetch\(", text), page
    for name in ("runs.csv.gz", "summary.json", "records.json.gz", "README.md"):
        assert (out / name).exists() and f'href="{name}"' in html
    assert (
        'href="figures.html#ess-bars"' in html and '<section id="answer-figure">' in (out / "figures.html").read_text()
    )
    linked = set(re.findall(r'href="models/([^"]+)"', html))
    assert linked == {p.name for p in (out / "models").glob("*.html")} and len(linked) >= 10
    assert 'href="../index.html"' in (out / "models" / sorted(linked)[0]).read_text()


def test_no_missing_value_is_printed_as_text(report):
    """nan, None or inf never stand in a page's text (a missing value shows as "–" or says what is missing);
    model sources (<pre>) aside, where Python's None is code."""
    _, out = report
    for page in [*(out / n for n in PAGES), *(out / "models").glob("*.html")]:
        text = re.sub(r"<pre>.*?</pre>|<svg.*?</svg>|<[^>]+>", " ", page.read_text(), flags=re.S)
        assert not re.search(r"\b(nan|NaN|None|inf|-inf)\b", text), (
            page,
            re.search(r".{60}\b(nan|NaN|None|inf|-inf)\b.{60}", text, re.S),
        )


def test_a_planted_nan_is_seen_by_the_missing_value_check(tmp_path, fixture_records):
    """The check above can fail: a stray NaN in a record's text field is printed as text somewhere."""
    planted = [replace(r, engine_info={**r.engine_info, "matmul_precision": "nan"}) for r in fixture_records]
    index = build(write(tmp_path, planted), tmp_path / "r")
    text = re.sub(r"<pre>.*?</pre>|<svg.*?</svg>|<[^>]+>", " ", pages(index), flags=re.S)
    assert re.search(r"\bnan\b", text)


def test_the_committed_pages_open_at_once():
    """The committed rendering's index stays under 250 KB and every other page under 400 KB: pairings, forest
    plots, figures, studies, sources and run tables are on pages of their own."""
    from stanjax.models import ROOT

    for name in PAGES:
        page = ROOT / "results" / "report" / name
        limit = 250_000 if name == "index.html" else 400_000
        assert page.stat().st_size <= limit, f"{page}: {page.stat().st_size:,} bytes"


def test_the_files_the_committed_report_promises_are_beside_it():
    """Every file a committed page links to, and every file results/README.md names beside the report, is there:
    the README once promised a records.json.gz that the committed report (its records linked in place) never had."""
    report_dir = ROOT / "results" / "report"
    for page in [*(report_dir / n for n in PAGES), *sorted((report_dir / "models").glob("*.html"))[:3]]:
        for target in re.findall(r'href="([^"#:]+)"', page.read_text()):
            assert (page.parent / target).exists(), (page.name, target)
    readme = (ROOT / "results" / "README.md").read_text()
    paragraph = readme[readme.index("[`report/`]") :].split("\n\n")[0]
    named = re.findall(r"`([\w./]+\.(?:gz|json|html|md))`", paragraph)
    assert "summary.json" in named
    for name in named:
        assert (ROOT / "results" / name if name.startswith("report/") else report_dir / name).exists(), name


def test_every_record_is_in_the_csv_and_the_json(report, fixture_records):
    _, out = report
    study_runs = records.read(STUDIES)
    measurements = records.read_measurements(STUDIES)
    assert len(pd.read_csv(out / "runs.csv.gz")) == len(fixture_records) + len(study_runs)
    every = json.loads(gzip.decompress((out / "records.json.gz").read_bytes()))
    assert len(every) == len(fixture_records) + len(study_runs) + len(measurements)


def block_ratios(model_id: str, numerator: str, denominator: str) -> tuple[list[float], list[float] | None]:
    """Warm and cold ESS/s ratios of one model, block by block (the fixture's blocks are its repeats, in one
    campaign), straight from the records: every valid run is clean here."""
    rows = [r for r in measured(records.read(RUNS)) if r.valid and r.model_id == model_id]
    side = {label: {r.repeat: r for r in rows if r.label == label} for label in (numerator, denominator)}
    blocks = sorted(set(side[numerator]) & set(side[denominator]))

    def cold(label):
        runs = side[label].values()
        if all(r.timings.compile_cached for r in runs):
            return None
        compile_s = max(r.timings.compile_s for r in runs)
        return {b: r.metrics.min_ess_bulk / (r.timings.user_s + compile_s) for b, r in side[label].items()}

    warm = [side[numerator][b].metrics.ess_per_s / side[denominator][b].metrics.ess_per_s for b in blocks]
    a, b = cold(numerator), cold(denominator)
    return warm, [a[k] / b[k] for k in blocks] if a and b else None


def invalid_runs(model_id: str, label: str) -> int:
    return sum(not r.valid and r.model_id == model_id and r.label == label for r in records.read(RUNS))


def test_every_headline_number_is_recomputed_from_the_records(report):
    _, out = report
    block = section(pairings(out / "index.html"), "headline")
    comparisons = re.findall(
        r'<article class="comparison" data-numerator="([^"]+)" data-denominator="([^"]+)" '
        r'data-machine="([^"]+)">(.*?)</article>',
        block,
        re.S,
    )
    assert comparisons
    checked = 0
    for numerator, denominator, machine, body in comparisons:
        numbers = re.findall(r'<data value="([^"]*)" data-model="([^"]*)" data-quantity="([^"]*)">([^<]*)</data>', body)
        model_ids = list(dict.fromkeys(m for _, m, _, _ in numbers if m))
        values = {m: block_ratios(m, numerator, denominator) for m in model_ids}
        warm, warm_geo = stats.block_ratios_with_geomean([values[m][0] for m in model_ids])
        cold_models = [m for m in model_ids if values[m][1]]
        cold, cold_geo = (
            stats.block_ratios_with_geomean([values[m][1] for m in cold_models]) if cold_models else ([], None)
        )
        expected = {
            ("", "models"): len(model_ids),
            ("", "cold_models"): len(cold_models),
            ("", "min_blocks"): stats.MIN_BLOCKS,
        }
        for name, per_model, geo, ids in (("warm", warm, warm_geo, model_ids), ("cold", cold, cold_geo, cold_models)):
            if geo is not None:
                expected |= {("", name): geo.value, ("", f"{name}_low"): geo.low, ("", f"{name}_high"): geo.high}
            for model_id, ratio in zip(ids, per_model):
                expected |= {
                    (model_id, name): ratio.value,
                    (model_id, f"{name}_low"): ratio.low,
                    (model_id, f"{name}_high"): ratio.high,
                }
        for model_id in model_ids:
            assert np.median(values[model_id][0]) == pytest.approx(expected[(model_id, "warm")], rel=1e-12)
            expected |= {
                (model_id, "blocks"): len(values[model_id][0]),
                (model_id, "invalid"): invalid_runs(model_id, numerator) + invalid_runs(model_id, denominator),
            }
        for value, model_id, quantity, text in numbers:
            want = expected[(model_id, quantity)]
            assert float(value) == pytest.approx(want, rel=1e-12), (model_id, quantity)
            assert text == (
                str(want)
                if isinstance(want, int)
                else speed(want)
                if (model_id, quantity) == ("", "warm")
                else times(want)
            )
            checked += 1
        # No other number in the block: strip the checked numbers, figures, labels and names, and no digit is left.
        rest = re.sub(r"<figure>.*?</figure>|<data[^>]*>[^<]*</data>|<code>[^<]*</code>|<[^>]+>", " ", body, flags=re.S)
        sizes = re.findall(r'<td class="text">(\w+)</td>', body) + re.findall(r"size (\w+)</span>", body)
        for name in [numerator, denominator, machine, *model_ids, *sizes, f"{round(stats.LEVEL * 100)} %"]:
            rest = rest.replace(name, " ")
        assert not re.search(r"\d", rest), rest
    assert checked > 20


def test_a_rendering_committed_beside_its_records_links_to_them_instead_of_copying_them(tmp_path):
    results = tmp_path / "results"
    (results / "machine" / "campaign").mkdir(parents=True)
    shutil.copy(RUNS, results / "machine" / "campaign" / "results.jsonl")
    index = build(results, results / "report", records_in_place=True)
    assert not (results / "report" / "records.json.gz").exists()
    assert 'the records themselves, in <a href="../">../</a>' in index.read_text()
    assert "the records are in [`../`](../)" in (results / "report" / "README.md").read_text()


def test_a_model_run_under_two_settings_counts_once_with_its_newest_runs(tmp_path, fixture_records):
    """A model whose settings changed (another config hash, later runs, here NumPyro twice as fast): the
    geometric mean counts it once, with the newer pair; both stay in the run table."""
    eight = "eight_schools-eight_schools_noncentered"
    newer = [
        replace(
            r,
            config_hash="0123456789ab",
            run_id=f"{r.run_id}-newer",
            created="2026-12-01T00:00:00+00:00",
            metrics=replace(r.metrics, ess_per_s=r.metrics.ess_per_s * (2 if r.engine == "numpyro" else 1)),
        )
        for r in fixture_records
        if r.model_id == eight and r.valid
    ]

    def jax_cpu_vs_stan_cpu(recs, name):
        (tmp_path / name).mkdir()
        build(write(tmp_path / name, recs), tmp_path / name / "report")
        headline = json.loads((tmp_path / name / "report" / "summary.json").read_text())["headline"]
        return next(c for c in headline if (c["numerator"], c["denominator"]) == ("NumPyro-CPU", "httpstan-CPU"))

    before, after = (
        jax_cpu_vs_stan_cpu(fixture_records, "before"),
        jax_cpu_vs_stan_cpu([*fixture_records, *newer], "after"),
    )
    ids = [m["model_id"] for m in after["models"]]
    assert len(ids) == len(set(ids)) == len(before["models"])
    (old,), (new,) = ([m for m in c["models"] if m["model_id"] == eight] for c in (before, after))
    assert new["config_hash"] == "0123456789ab" and new["warm"]["value"] == pytest.approx(2 * old["warm"]["value"])
    runs = pd.read_csv(tmp_path / "after" / "report" / "runs.csv.gz")
    assert (runs.model_id == eight).sum() == len([r for r in fixture_records if r.model_id == eight]) + len(newer)


def test_strings_from_records_are_escaped(tmp_path, fixture_records):
    crafted = replace(
        fixture_records[0],
        status="error",
        error="<script>alert('x')</script>",
        metrics=None,
        timings=None,
        run_id="crafted",
        model_id="<b>bold</b>-model",
        valid=False,
        failed_gates=["completed"],
    )
    html = pages(build(write(tmp_path, [*fixture_records, crafted]), tmp_path / "r"))  # the failed runs' page too
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "<b>bold</b>" not in html


def test_invalid_runs_are_shown_and_left_out_of_ratios(tmp_path, fixture_records):
    stan_runs = [r for r in fixture_records if r.model_id.startswith("eight_schools") and r.engine == "stan"]
    recs = [replace(r, valid=False, failed_gates=["rhat"]) if r in stan_runs else r for r in fixture_records]
    out = tmp_path / "r"
    build(write(tmp_path, recs), out)
    assert "no: rhat" in pages(out / "index.html")
    headline = section(pairings(out / "index.html"), "headline")
    # no valid Stan run: no ratio row, and the mean names it as left out, with why
    assert '<td class="text"><code>eight_schools-eight_schools_noncentered</code>' not in headline
    assert '<td class="text"><code>covtype_synth-logistic_regression</code>' in headline
    assert "<code>eight_schools-eight_schools_noncentered</code> (no valid httpstan-CPU run)" in headline
    summary = json.loads((out / "summary.json").read_text())["summary"]
    row = next(s for s in summary if s["model_id"].startswith("eight_schools") and s["label"] == "httpstan-CPU")
    assert row["invalid"] == len(stan_runs) and row["repeats"] == 0


def claim_rows(html: str) -> list[tuple[str, str, str]]:
    """(anchor, source, verdict) of every row of the claims table."""
    return re.findall(
        r'<tr id="claim-([^"]+)"><td class="text">(.*?)</td>.*?<td class="text verdict-[^"]*">(.*?)</td>'
        r"</tr>",
        section(html, "claims"),
        re.S,
    )


def test_claims_say_what_was_measured_and_why_not(report):
    html, _ = report
    claims = section(html, "claims")
    rows = [(source, verdict) for _, source, verdict in claim_rows(html)]
    sources = [source for source, _ in rows]
    assert sources.count("Maskell, StanCon 2024") == 3
    assert {"Tran &amp; Hoffman 2018 (Edward2)", "Ingram 2021", "rlouf 2020", "TFP on JAX (seed 002)"} <= set(sources)
    verdicts = dict(zip(sources, (v for _, v in rows)))
    assert verdicts["Tran &amp; Hoffman 2018 (Edward2)"].startswith(
        "not measured here (no valid Stan-CPU and JAX-GPU runs of logistic regression"
    )
    assert "no GPU runs of Bradley–Terry in the data-size study" in claims
    # The devices study ran on simulated CPU devices: a speed-up there is not evidence either way.
    assert verdicts["TFP on JAX (seed 002)"].startswith("not measured here: the 4 devices are one CPU split by XLA")
    # httpstan-CPU ÷ NumPyro-CPU is measured on these records, but on tiny data: never "not measured", and no verdict.
    maskell = [v for s, v in rows if s == "Maskell, StanCon 2024"]
    assert maskell[2].startswith("insufficient data in every regime measured")
    assert all(v.startswith("not measured here") for v in maskell[:2])  # no GPU run in the fixture
    # every claim in the summary box, linked to its row
    box = section(html, "answer")
    for anchor, _, _ in claim_rows(html):
        assert f'href="#claim-{anchor}"' in box


def test_an_unmeasured_claim_lists_the_invalid_runs_that_could_have_measured_it(tmp_path, fixture_records):
    covtype = next(r for r in fixture_records if r.model_id == "covtype_synth-logistic_regression")
    # N comes from the record's own sizes, not from today's presets: a record of the large preset says 581,012
    large = replace(
        covtype, size="large", sizes={"N": 581_012, "D": 54}, valid=False, failed_gates=["rhat"], run_id="large-invalid"
    )
    html = build(write(tmp_path, [*fixture_records, large]), tmp_path / "r").read_text()
    claims = section(html, "claims")
    per_chain = large.metrics.ms_per_gradient * large.config.chains  # the claim is about one chain's step
    assert (
        f"invalid runs, not used: {large.label} {number(per_chain)} ms per leapfrog step of a chain "
        f"({number(large.metrics.ms_per_gradient)} ms per gradient over {large.config.chains} chains)"
    ) in claims
    assert "failed rhat" in claims


def test_studies_are_plotted(report):
    _, out = report
    studies = section((out / "studies.html").read_text(), "studies")
    assert "Data size: covtype_synth-logistic_regression on " in studies
    # NUTS-family runs and random-walk Metropolis are separate figures, each naming its model and sampler
    assert "Chains: covtype_synth-logistic_regression (tiny), ChEES-tuned HMC and NUTS" in studies
    assert "Chains: random-walk Metropolis on rlouf&#39;s 1-D Gaussian mixture" in studies
    assert "Devices: sharded log density" in studies
    assert studies.count("<svg") == len(re.findall(r"<h3>", studies))


def test_markdown_summary_states_the_headline(report):
    _, out = report
    summary = (out / "README.md").read_text()
    headline = pairings(out / "index.html")
    sentence = re.search(r"<strong>NumPyro-CPU vs httpstan-CPU: <data[^>]*>([^<]+)</data></strong>", headline)
    assert f"**NumPyro-CPU vs httpstan-CPU: {sentence.group(1)}**" in summary
    assert "| Maskell, StanCon 2024 |" in summary


@pytest.mark.parametrize("front_end, label", [("cmdstan", "CmdStan-CPU"), ("pystan", "PyStan-CPU")])
def test_other_stan_front_ends_are_their_own_label_never_pooled_with_bundled_stan(
    tmp_path, fixture_records, front_end, label
):
    assert {r.front_end for r in fixture_records if r.engine == "stan"} == {"httpstan"}  # made by httpstan's build
    relabelled = [
        replace(r, front_end=front_end, run_id=f"{r.run_id}-{front_end}") for r in fixture_records if r.engine == "stan"
    ]
    html = pairings(build(write(tmp_path, [*fixture_records, *relabelled]), tmp_path / "r"))
    assert f'data-numerator="{label}" data-denominator="httpstan-CPU"' in html
    assert f'data-numerator="NumPyro-CPU" data-denominator="{label}"' in html
    front_ends = re.search(r'<p id="stan-front-ends">(.*?)</p>', html, re.S).group(1)
    if front_end == "cmdstan":  # the same records relabelled: the same speed, ratio 1 for every model
        models_run = {r.model_id for r in relabelled if r.valid}
        assert "CmdStan-CPU vs httpstan-CPU in ESS/s: 1.00× faster" in front_ends
        assert front_ends.count(" 1.00×") == len(models_run) + 1
    else:
        assert "not measured in these records" in front_ends
    # Stan against Stan is the Stan side's, never the headline's
    assert f'data-numerator="{label}" data-denominator="httpstan-CPU"' in section(html, "stan-side")
    assert 'data-denominator="httpstan-CPU"' not in section(html, "headline").replace(
        'data-numerator="NumPyro-CPU" data-denominator="httpstan-CPU"', ""
    )


def test_provenance_names_the_workers_malloc_settings_and_records_made_without_them(tmp_path, fixture_records):
    tuned = [
        replace(
            r,
            provenance=replace(r.provenance, glibc_tunables="glibc.malloc.mmap_threshold=1"),
            run_id=f"{r.run_id}-tuned",
            sampler_seed=r.sampler_seed + 1,
        )
        for r in fixture_records[:2]
    ]
    untuned = [r for r in fixture_records if r.provenance.glibc_tunables is None]
    build(write(tmp_path, [*untuned, *tuned]), tmp_path / "r")
    provenance = (tmp_path / "r" / "provenance.html").read_text()
    malloc = re.search(r'<p id="malloc">(.*?)</p>', provenance, re.S).group(1)
    assert "glibc.malloc.mmap_threshold=1" in malloc
    assert ("not set (glibc&#39;s adaptive defaults)" in malloc) == bool(untuned)


@pytest.mark.parametrize(
    "device, precision, matmul, label",
    [
        ("gpu", "float32", "highest", "NumPyro-GPU-f32"),
        ("gpu", "float32", None, "NumPyro-GPU-tf32"),  # JAX's default matmul precision: TF32 on Ampere and later
        ("gpu", "float64", None, "NumPyro-GPU"),
        ("cpu", "float64", "highest", "NumPyro-CPU"),
    ],
)
def test_gpu_float32_runs_with_tf32_matmuls_are_never_pooled_with_full_float32(device, precision, matmul, label):
    chain_method = "parallel" if device == "cpu" else "vectorized"  # the defaults: not named in the label
    assert engine_label("numpyro", "numpyro", device, precision, chain_method, matmul) == label


def test_rlouf_cpu_claim_is_judged_on_cpu_measurements_only():
    from stanjax.reports.study_claims import rlouf_row

    def rwmh(backend, draws_per_s, command, device=None, gpu=(), chains=1024):
        machine = {"cpu": "Some CPU", "cores": 16, "cores_usable": 3, "gpu": list(gpu)}
        m = {
            "measure": "rwmh",
            "backend": backend,
            "chains": chains,
            "steps": 10_000,
            "wall_s": chains * 10_000 / draws_per_s,
            "draws_per_s": draws_per_s,
            "provenance": {"machine": machine, "command": command},
        }
        return m | ({"device": device} if device else {})

    on_gpu = rwmh("jax", 1e9, "cli.py study chains --device gpu", gpu=["NVIDIA H100 80GB HBM3, 580, 81559 MiB"])
    # a record without the device field: from --device
    assert rlouf_row([on_gpu])["verdict"].startswith("not measured here")
    slow_cpu = rwmh("jax", 1e6, "cli.py study chains", device="cpu")
    row = rlouf_row([on_gpu, slow_cpu])
    assert row["verdict"].startswith("not reproduced")  # 1e9 draws take 1000 s on this CPU; the GPU does not count
    assert "JAX-CPU: 1,000,000 draws/s" in row["measured"] and "JAX-GPU: 1,000,000,000 draws/s" in row["measured"]
    assert "(NVIDIA H100 80GB HBM3)" in row["measured"] and "(Some CPU, 3 cores)" in row["measured"]
    assert "1e9 draws in 1,000 s at that rate" in row["measured"]  # extrapolated from 1e7 draws, and says so
    whole = rwmh("jax", 4e7, "cli.py campaign gpu", device="cpu", chains=100_000)
    assert "1,000,000,000 draws in 25.0 s, run whole" in rlouf_row([whole])["measured"]
    # Still faster at the most chains measured: a larger batch might reach the claim, so no verdict either way.
    fewer = {**rwmh("jax", 5e5, "cli.py study chains", device="cpu"), "chains": 64}
    assert rlouf_row([fewer, slow_cpu])["verdict"].startswith(
        "inconclusive (JAX on Some CPU, 3 cores: draws/s still rising at 1,024 chains"
    )


def test_records_of_the_same_seed_count_once(tmp_path, fixture_records):
    """The same run recorded twice (or two campaigns seeded alike: the same draws) is one repeat, not two."""
    again = [replace(r, run_id=f"{r.run_id}-again", campaign_id="another") for r in fixture_records]
    once = build(write(tmp_path, fixture_records), tmp_path / "once")
    (tmp_path / "twice").mkdir()
    both = build(write(tmp_path / "twice", [*fixture_records, *again]), tmp_path / "twice" / "report")
    assert (
        json.loads((both.parent / "summary.json").read_text())["headline"]
        == json.loads((once.parent / "summary.json").read_text())["headline"]
    )
    assert f"{len(fixture_records)} further record(s) repeat an" in both.read_text()
    as_read = json.loads(gzip.decompress((both.parent / "records.json.gz").read_bytes()))
    assert len(as_read) == 2 * len(fixture_records)  # all, as read


def test_the_page_says_which_lines_of_which_file_it_skipped_and_why(tmp_path, fixture_records, report, capsys):
    """A damaged results file is said once on stderr, as one plain line (the file is read once), and the page says
    how many lines of which file were left out and why; a clean one's page says nothing of it."""
    from stanjax.runner.commands.cli import main

    results = write(tmp_path, fixture_records)
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join([lines[0], "not json\n", lines[1], "[1]\n", *lines[2:]]))
    assert main(["report", str(results), "-o", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().err == f"stanjax report: warning: {results}: skipped unreadable line(s) [2, 4]\n"
    page = " ".join((tmp_path / "r" / "index.html").read_text().split())
    said = f"2 line(s) of the results could not be read and are in no number here: 2 of <code>{results}</code>"
    assert f"{said} (unreadable line(s) [2, 4])." in page
    assert "could not be read" not in report[0]


def test_the_same_records_make_the_same_pages_but_for_when(tmp_path, fixture_records):
    """A committed report made again shows only what changed: no random figure ids, no figure dates."""
    records_at = write(tmp_path, fixture_records)
    pages = []
    for name in ("a", "b"):
        out = build(records_at, tmp_path / name).parent
        pages.append(
            {
                page.name: [line for line in page.read_text().splitlines() if "Generated 20" not in line]
                for page in out.glob("*.html")
            }
        )
    assert "figures.html" in pages[0] and pages[0] == pages[1]


HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '=HYPERLINK("http://x")',
    "a|b\nc",
    "m" * 5_000,
]  # longer than any file name may be


def test_hostile_strings_in_every_field_stay_text_in_every_output(tmp_path, fixture_records):
    """Record strings (model IDs, errors, labels, provenance, machine names) are escaped in HTML and Markdown,
    never run as CSV formulas, and never become file names."""
    base = fixture_records[0]
    hostile = []
    for i, text in enumerate(HOSTILE):
        machine = replace(base.provenance.machine, cpu=text, hostname=text, gpu=[text])
        provenance = replace(
            base.provenance,
            machine=machine,
            command=text,
            git_commit=text,
            versions={**base.provenance.versions, "jax": text},
        )
        hostile.append(
            replace(
                base,
                run_id=f"hostile-{i}",
                model_id=text,
                size=text,
                error=text,
                front_end=text,
                engine=text,
                device=text,
                campaign_id=text,
                provenance=provenance,
                sizes={text[:50]: 1},
                engine_info={"stan_interface": text},
                sampler_seed=i,
            )
        )
        hostile.append(
            replace(
                hostile[-1],
                run_id=f"hostile-failed-{i}",
                status="error",
                valid=False,
                failed_gates=[text],
                metrics=None,
                timings=None,
                sampler_seed=None,
            )
        )
    index = build(write(tmp_path, [*fixture_records, *hostile]), tmp_path / "report")
    html, markdown = index.read_text(), (index.parent / "README.md").read_text()
    for text in (HOSTILE[0], HOSTILE[1]):
        assert text not in html and text not in markdown
    assert "&lt;script&gt;" in html and "&lt;script&gt;" in markdown
    assert "a\\|b c" in markdown  # a table cell stays one cell
    csv = gzip.decompress((index.parent / "runs.csv.gz").read_bytes()).decode()
    assert "'=HYPERLINK" in csv and ",=HYPERLINK" not in csv and '"=HYPERLINK' not in csv
    assert sorted(p.name for p in index.parent.iterdir()) == sorted(
        ["README.md", *PAGES, "models", "records.json.gz", "runs.csv.gz", "summary.json"]
    )
    assert all(re.fullmatch(r"[\w.-]{1,120}\.html", p.name) for p in (index.parent / "models").iterdir())
    assert "&lt;script&gt;" in pages(index) and HOSTILE[0] not in pages(index)


def test_each_bar_is_the_median_of_its_machines_and_sizes_valid_runs(tmp_path, fixture_records):
    """The same models and engines on a second machine (10× faster) and at a second size (10× slower): every bar is
    the median of its own machine's and size's valid runs; an average across machines or sizes fails."""

    def moved(r, factor: float, **changes):
        return replace(
            r,
            run_id=f"{r.run_id}-{factor}",
            **changes,
            metrics=replace(r.metrics, ess_per_s=r.metrics.ess_per_s * factor) if r.metrics else None,
        )

    elsewhere = [
        moved(
            r, 10.0, provenance=replace(r.provenance, machine=replace(r.provenance.machine, cpu="Other CPU", cores=64))
        )
        for r in fixture_records
    ]
    smaller = [moved(r, 0.1, size="small") for r in fixture_records]
    recs = [*fixture_records, *elsewhere, *smaller]
    html = (build(write(tmp_path, recs), tmp_path / "r").parent / "figures.html").read_text()
    panels = re.findall(
        r'<figure class="ess-bars" data-machine="([^"]+)" data-size="([^"]+)">(.*?)</figure>', html, re.S
    )
    expected: dict[tuple, dict] = {}
    for r in recs:
        if r.valid and not r.study:
            expected.setdefault((r.machine, r.size), {}).setdefault((r.model_id, r.label), []).append(
                r.metrics.ess_per_s
            )
    assert sorted((machine, size) for machine, size, _ in panels) == sorted(expected)
    for machine, size, svg in panels:
        bars = sorted(float(v) for v in re.findall(r'id="f[0-9a-f]{8}-bar:([^"]+)"', svg))
        want = sorted(float(np.median(values)) for values in expected[(machine, size)].values())
        assert bars == pytest.approx(want, rel=1e-12), (machine, size)
        # a label that ran a model without a valid run says so in the panel
        assert "NumPyro-CPU: no valid run (2 run(s))" in svg


def test_fewer_than_five_blocks_is_insufficient_data_and_five_give_a_verdict(tmp_path, fixture_records):
    """Not tiny data (relabelled "small"), so the blocks alone decide: 5 give a verdict, the fixture's 2 do not."""
    small = [replace(r, size="small") for r in fixture_records]
    (tmp_path / "two").mkdir()
    five_index = build(write(tmp_path, five_blocks(small)), tmp_path / "five")
    five = five_index.read_text()
    two_index = build(write(tmp_path / "two", small), tmp_path / "two" / "r")
    two = two_index.read_text()

    def maskell(html: str) -> str:
        return {anchor: verdict for anchor, _, verdict in claim_rows(html)}["maskell-stan-cpu"]

    assert not maskell(five).startswith("insufficient data")
    assert maskell(two).startswith("insufficient data in every regime measured")
    assert re.search(r"×(?: slower)? \(2 blocks\): insufficient data", section(two, "claims"))
    regime_map = section(regimes(two_index), "regime-map")
    valid = {(r.model_id, r.engine) for r in small if r.valid and r.repeat == 0}
    paired = {model_id for model_id, engine in valid if (model_id, "stan") in valid and (model_id, "numpyro") in valid}
    assert regime_map.count("insufficient data<br>") == len(paired)
    blocks = {
        model_id: sum(
            all(
                any(r.valid and (r.model_id, r.engine, r.repeat) == (model_id, engine, block) for r in small)
                for engine in ("stan", "numpyro")
            )
            for block in (0, 1)
        )
        for model_id in paired
    }
    cells = {
        row["model_id"]: c
        for m in json.loads((tmp_path / "two" / "r" / "summary.json").read_text())["regime_maps"]
        for g in m["groups"]
        for row in g["rows"]
        for c in row["cells"]
        if "ratio" in c
    }
    assert {model_id: (c["state"], c["reason"]) for model_id, c in cells.items()} == {
        model_id: ("insufficient data", f"{n} block{'s' if n > 1 else ''}; 5 needed") for model_id, n in blocks.items()
    }
    assert len(re.findall(r"× (?:faster|slower) so far: [12] blocks?; 5 needed", regime_map)) == len(paired)
    # five_blocks adds 3 copies of block 1: a model with a valid pair in it only has 4 blocks, still too few
    assert len(
        re.findall(r"× (?:faster|slower) so far: 4 blocks; 5 needed", section(regimes(five_index), "regime-map"))
    ) == sum(n == 1 for n in blocks.values())
    assert section(regimes(five_index), "regime-map").count("insufficient data<br>") == sum(
        n == 1 for n in blocks.values()
    )


def test_the_regime_map_says_why_a_cell_has_no_ratio(report, report_today, fixture_records):
    html, out = report
    regime_map = section(regimes(out / "index.html"), "regime-map")
    # matrix factorisation: runs on both sides, none valid; tiny data: a ratio, but no verdict
    assert re.search(
        r"invalid<br><span class=\"small\">NumPyro-CPU 0 of 2 valid \(failed: [^)]+\); "
        r"httpstan-CPU 0 of 2 valid",
        regime_map,
    )
    assert re.search(r"× (?:faster|slower) so far: 2 blocks; 5 needed", regime_map)
    # every registered model has a row, grouped under its regime's name
    for model_id in {r.model_id for r in fixture_records}:
        assert f"<code>{model_id}</code>" in regime_map
    assert "data-parallel likelihood" in regime_map and "tiny model" in regime_map
    box = section(html, "answer")
    assert (
        "JAX-GPU against Stan-CPU (ESS/s per model, compile excluded): not answered yet. No model has 5 clean "
        "paired blocks of both; these records hold no JAX-GPU run."
    ) in box
    assert "JAX-CPU against Stan-CPU (ESS/s per model, compile excluded): not answered yet." in box
    # a model without a ratio says why, where the reader looks for its number: none valid, or every ratio over
    # httpstan's build of the bundled Stan (kept in the regime map above, never a first-screen answer)
    assert re.search(r"Matrix factorisation \(MovieLens-like\)</a>.*?invalid: NumPyro-CPU 0 of 2 valid", box, re.S)
    assert re.search(
        r"Radon, multilevel linear</a>.*?over httpstan-CPU only \([\d.]+× (?:faster|slower)? ?on ", box, re.S
    )
    assert "so far (2 blocks" not in box
    today = section(report_today[0], "answer")
    assert re.search(
        r"No verdict: [^<]*Radon, multilevel linear [\d.]+× (?:faster|slower) so far \(2 blocks; 5 needed; tiny "
        r"data\)",
        today,
    ), today


def test_the_summary_box_says_where_the_gpu_wins_and_where_it_loses(tmp_path, fixture_records):
    """NumPyro's runs moved to a GPU, 5× Stan's speed on logistic regression (Maskell's ratio) and a tenth of it on
    eight schools."""
    stan = {(r.model_id, r.repeat): r.metrics.ess_per_s for r in fixture_records if r.engine == "stan" and r.valid}
    factor = {"covtype_synth-logistic_regression": 5.0, "eight_schools-eight_schools_noncentered": 0.1}
    gpu = [
        replace(
            r,
            device="gpu",
            precision="float32",
            chain_method="vectorized",
            size="small",
            engine_info={**r.engine_info, "matmul_precision": "highest"},
            metrics=replace(r.metrics, ess_per_s=stan[(r.model_id, r.repeat)] * factor[r.model_id]),
        )
        for r in fixture_records
        if r.engine == "numpyro" and r.model_id in factor
    ]
    stan_runs = [
        replace(r, size="small") for r in built_today(fixture_records) if r.engine == "stan" and r.model_id in factor
    ]
    # 5 blocks, every block's ratio exactly the factor (five_blocks scales NumPyro's copies: undo that here)
    recs = [
        replace(r, metrics=replace(r.metrics, ess_per_s=r.metrics.ess_per_s / (1 + r.repeat / 20)))
        if r.repeat > 1 and r.device == "gpu"
        else r
        for r in five_blocks([*gpu, *stan_runs])
    ]
    html = build(write(tmp_path, recs), tmp_path / "r").read_text()
    box = section(html, "answer")
    assert re.search(
        r"JAX-GPU against Stan-CPU \(ESS/s per model, compile excluded\): JAX-GPU faster on Logistic "
        r"regression \(covertype-like\) \(5\.00× \(5\.00–5\.00×\), [^)]+\); JAX-GPU slower on Eight "
        r"schools, non-centred \(10\.0× slower \(10\.0–10\.0× slower\), ",
        box,
    ), box
    # each number's qualifiers beside it: machine, size, blocks, and what each side had
    assert re.search(
        r"small size, 5 paired blocks\. NumPyro-GPU-f32: float32 with full float32 matrix products, "
        r"4 chains vectorized, on the GPU; Stan-CPU: float64, 4 chains parallel, cores: ",
        box,
    ), box
    verdict = {anchor: v for anchor, _, v in claim_rows(html)}["maskell-gpu-stan"]
    assert verdict.startswith("depends on the regime: ")  # judged per regime, not by the mean of 10× and 0.1×
    assert "reproduced for data-parallel likelihood" in verdict and "not reproduced for tiny model" in verdict


def test_a_data_size_study_whose_every_run_failed_is_drawn_as_failures(tmp_path):
    """Failed runs have no values, only their N (drawn at the axis' floor): a figure of nothing else still gets
    its log axes (the first H200 campaign's Bradley-Terry grid, every CPU run failed, stopped the report)."""
    study = [
        replace(r, status="error", valid=False, error="Stan chain 1 failed (exit -11)")
        for r in records.read(STUDIES)
        if r.study == "data-size"
    ]
    html = build(write(tmp_path, study), tmp_path / "r").read_text()
    figures = (tmp_path / "r" / "studies.html").read_text()
    assert "Data size: " in html + figures and "failed run (crash or timeout)" in html + figures


def test_ingram_tells_no_gpu_runs_from_no_valid_gpu_runs(tmp_path):
    from stanjax.reports.runs_table import tidy
    from stanjax.reports.study_claims import ingram_row

    study = records.read(STUDIES)
    assert ingram_row(tidy(study), [])["measured"].startswith("no GPU runs of Bradley–Terry")
    on_gpu = [
        replace(r, device="gpu") if r.engine == "numpyro" and r.model_id.startswith("tennis") else r for r in study
    ]
    assert not any(r.valid for r in on_gpu if r.device == "gpu")  # the fixture's Bradley–Terry runs are invalid
    row = ingram_row(tidy(on_gpu), [])
    assert row["measured"].startswith(
        "no valid GPU runs of Bradley–Terry in the data-size study: 2 GPU run(s), none valid (failed: "
    )
    assert row["verdict"] == "not measured here (no valid GPU runs of Bradley–Terry in the data-size study)"


def test_approximate_runs_get_their_accuracy_figure_and_stay_out_of_every_ess_ratio(tmp_path, fixture_records):
    """Flow runs beside the fixture's eight schools: a figure of error against time with NUTS on both sides as
    points, a k-hat per flow run; no pairing, ESS bar or summary row of a flow."""
    schools = [r for r in fixture_records if r.model_id == "eight_schools-eight_schools_noncentered"]
    flows = [
        replace(
            r,
            engine="flow_realnvp",
            front_end="flowjax",
            chain_method="vectorized",
            run_id=f"{r.run_id}-flow",
            pairing="",
            block=None,
            gates={"completed": {"passed": True}, "khat": {"khat": khat, "limit": 0.7, "passed": khat < 0.7}},
            valid=khat < 0.7,
            failed_gates=[] if khat < 0.7 else ["khat"],
        )
        for r, khat in zip([r for r in schools if r.engine == "numpyro"], (0.3, 0.9))
    ]
    out = tmp_path / "r"
    html = build(write(tmp_path, [*fixture_records, *flows]), out).read_text()
    figure_page = (out / "accuracy.html").read_text()
    block = section(figure_page, "approximation-medians")
    assert "eight_schools-eight_schools_noncentered (tiny)" in block and "<svg" not in block  # figures below it
    assert 'href="accuracy.html#approximations"' in html and "RealNVP-flow-CPU" not in html  # the index: a link
    anchor = "accuracy-xeon-2core-eight_schools-eight_schools_noncentered-tiny"
    assert f'href="#{anchor}"' in block and f'<h3 id="{anchor}">' in figure_page
    assert "<svg" in section(figure_page, "approximations")
    assert "RealNVP-flow-CPU" in block and "NumPyro-CPU" in block and "httpstan-CPU" in block
    assert '<td class="text">RealNVP-flow-CPU</td><td>2</td><td>1</td>' in block  # 2 runs, 1 fitted (k-hat 0.3)
    assert 'id="stan-approximations">Stan\'s own ADVI and Pathfinder: no run in these records' in block
    assert "RealNVP-flow" not in pairings(out / "index.html")
    summary = json.loads((out / "summary.json").read_text())
    assert not any("flow" in str(row.get("label", "")) for row in summary["summary"])
    assert not any("RealNVP" in c["numerator"] or "RealNVP" in c["denominator"] for c in summary["headline"])
    stan_info = next(r for r in schools if r.engine == "stan").engine_info  # a Stan record's, as CmdStan's has
    stan_advi = replace(
        flows[0],
        engine="stan_advi_meanfield",
        front_end="cmdstan",
        run_id="advi",
        chain_method="parallel",
        engine_info={**stan_info, "method": "stan_advi_meanfield"},
    )
    build(write(tmp_path, [*fixture_records, *flows, stan_advi]), out)
    block = section((out / "accuracy.html").read_text(), "approximation-medians")
    assert "CmdStan-ADVI-meanfield-CPU" in block and 'id="stan-approximations"' not in block


CENTRED_IRT = "irt_sparse_synth-irt_2pl_centred"


def carpenter_points(flow_fitted, stan_fitted, size="default", parameters=1_003, flow_losses=None) -> pd.DataFrame:
    """Accuracy points (``reports.approximations.accuracy_points``) of flow and Stan runs on the centred IRT-2PL,
    with one mean-field ADVI run (final loss 1,300) where ``flow_losses`` are given."""
    losses = flow_losses or [1_000.0] * len(flow_fitted)

    def point(engine, family, fitted, failed, divergences, loss=float("nan")):
        return {
            "model_id": CENTRED_IRT,
            "engine": engine,
            "family": family,
            "approximate": engine != "stan",
            "retired": False,
            "size": size,
            "n_parameters": parameters,
            "fitted": fitted,
            "khat": (0.4 if fitted else 0.9) if engine != "stan" else float("nan"),
            "mean_error": 0.05 if fitted else 0.8,
            "user_s": 100.0,
            "failed_gates": "" if fitted else failed,
            "divergences": divergences,
            "final_loss": loss,
        }

    meanfield = [point("advi_meanfield", "jax", False, "khat", 0, 1_300.0)] if flow_losses else []
    return pd.DataFrame(
        meanfield
        + [point("flow_realnvp", "jax", f, "khat", 0, loss) for f, loss in zip(flow_fitted, losses)]
        + [point("stan", "stan", f, "divergences, reference", 0 if f else 120) for f in stan_fitted]
    )


def test_carpenter_is_judged_as_he_made_it_a_flow_against_stans_nuts_on_the_centred_irt(monkeypatch):
    """Reproduced when the RealNVP flow fits (k-hat < 0.7) where Stan's NUTS fails its gates; planted: a flow that
    does not fit, or NUTS that does, is "not reproduced"; split runs, tiny data, a smaller size and a missing side
    say so; with no model claiming it, "not measured here"; flows whose training broke down (a final loss not
    finite, or above mean-field ADVI's), "inconclusive"."""
    from stanjax.reports import approximations
    from stanjax.reports.approximations import carpenter_row

    assert approximations.claim_model("carpenter") == CENTRED_IRT
    monkeypatch.setattr(approximations, "claim_model", lambda claim: None)
    assert carpenter_row(carpenter_points([True], [False]))["verdict"] == "not measured here (no model for it yet)"
    monkeypatch.setattr(approximations, "claim_model", lambda claim: CENTRED_IRT if claim == "carpenter" else None)
    # planted: one flow's loss never finite, one ending above mean-field ADVI's (1,300), one below it
    broke = carpenter_row(carpenter_points([False] * 3, [False] * 3, flow_losses=[float("nan"), 12_293.0, 1_000.0]))
    assert broke["verdict"] == (
        "inconclusive (the flow's training broke down in 2 of 3 runs: its final ELBO not finite, or below "
        "mean-field ADVI's on the same posterior)"
    )
    assert carpenter_row(carpenter_points([False] * 3, [False] * 3, flow_losses=[1_000.0] * 3))["verdict"] == (
        "not reproduced"
    )

    row = carpenter_row(carpenter_points([True] * 3, [False] * 3))
    assert row["verdict"] == "reproduced"
    # Stan's own ADVI (through CmdStan) fitting there is not Stan's NUTS fitting there
    with_advi = carpenter_points([True] * 3, [False] * 3)
    advi = with_advi.iloc[[0]].assign(engine="stan_advi_meanfield", family="stan", approximate=True, fitted=True)
    assert carpenter_row(pd.concat([with_advi, advi], ignore_index=True)) == row
    assert "realNVP" in row["claim"] and "importance resampling" in row["claim"] and "k-hat" in row["differs"]
    assert "at size default (1,003 parameters): the flow fitted in 3 of 3 runs (median k-hat 0.4" in row["measured"]
    assert "Stan's NUTS passed its gates in 0 of 3 (gates failed: divergences, reference; median 120" in row["measured"]
    assert carpenter_row(carpenter_points([False] * 3, [False] * 3))["verdict"] == "not reproduced"
    assert carpenter_row(carpenter_points([True] * 3, [True] * 3))["verdict"] == "not reproduced"
    assert carpenter_row(carpenter_points([True, False], [False, False]))["verdict"].startswith("inconclusive")
    tiny = carpenter_row(carpenter_points([True], [False], size="tiny", parameters=73))["verdict"]
    assert tiny.startswith("insufficient data (measured on tiny data")
    small = carpenter_row(carpenter_points([True], [False], size="small", parameters=243))["verdict"]
    assert small == "reproduced at size small (243 parameters; the claim is about ~1,000)"
    missing = carpenter_row(carpenter_points([True], []))
    assert missing["verdict"] == "not measured here" and missing["measured"].startswith("no Stan NUTS run")
    # NUTS on the non-centred twin at the same size: counted per label; a superseded run, another size, a flow and
    # a scaling study's run are not
    twin = models.get(CENTRED_IRT).reference_twin
    base = {"model_id": twin, "size": "default", "study": "", "superseded": "", "retired": False, "draws": 2000}
    runs = pd.DataFrame(
        [
            {**base, "engine": "stan", "label": "httpstan-CPU", "valid": True},
            {**base, "engine": "stan", "label": "httpstan-CPU", "valid": False},
            {**base, "engine": "numpyro", "label": "NumPyro-CPU", "valid": True},
            {**base, "engine": "numpyro", "label": "NumPyro-CPU", "valid": True, "draws": 1000},
            {**base, "engine": "stan", "label": "httpstan-CPU", "valid": True, "superseded": "a bug"},
            {**base, "engine": "stan", "label": "httpstan-CPU", "valid": True, "size": "small"},
            {**base, "engine": "stan", "label": "httpstan-CPU", "valid": True, "study": "data-size"},
            {**base, "engine": "flow_realnvp", "label": "RealNVP-CPU", "valid": True},
        ]
    )
    measured = carpenter_row(carpenter_points([False] * 3, [False] * 3), runs)["measured"]
    assert measured.endswith(
        "; on its non-centred twin (the same posterior, reparameterised) NUTS passed its gates in 3 of 4 runs "
        "(NumPyro-CPU 1 of 1 at 1,000 draws a chain, NumPyro-CPU 1 of 1 at 2,000 draws a chain, httpstan-CPU 1 of 2 at "
        "2,000 draws a chain)"
    ), measured


def test_tran_hoffman_compares_one_chains_step_time_at_covertype_size(fixture_records):
    from stanjax.reports.claims import tran_hoffman_row
    from stanjax.reports.runs_table import tidy

    covtype = [
        replace(r, size="large", sizes={"N": 581_012, "D": 54})
        for r in fixture_records
        if r.model_id.startswith("covtype")
    ]
    on_gpu = [
        replace(r, device="gpu", precision="float32", chain_method="vectorized") if r.engine == "numpyro" else r
        for r in covtype
    ]
    row = tran_hoffman_row(tidy(on_gpu))
    step = {(r.engine, r.repeat): r.metrics.ms_per_gradient * r.config.chains for r in on_gpu}
    ratio = np.median([step["stan", block] / step["numpyro", block] for block in (0, 1)])  # per block
    assert f"in time per leapfrog step of one chain at N = 581,012: {times(ratio)} on " in row["measured"]
    assert "median of 2 block(s) of campaign " in row["measured"]
    assert row["verdict"].startswith("insufficient data (2 blocks; 5 needed") and "V100" in row["hardware"]
    row = tran_hoffman_row(tidy(five_blocks(on_gpu)))
    assert row["verdict"].split(" (")[0] in ("reproduced", "not reproduced") and "claimed 100×" in row["verdict"]


TWO_MODELS = ("covtype_synth-logistic_regression", "eight_schools-eight_schools_noncentered")


def headline_of(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    found = [c for c in summary["headline"] if (c["numerator"], c["denominator"]) == ("NumPyro-CPU", "httpstan-CPU")]
    return {
        "comparison": found[0] if found else None,
        "left_out": summary["left_out"],
        "models": {m["model_id"]: m for m in (found[0]["models"] if found else [])},
    }


def test_runs_with_no_load_recorded_enter_no_answer_and_are_counted(tmp_path):
    raw = records.read(RUNS)
    html = build(write(tmp_path, raw), tmp_path / "r").read_text()
    assert headline_of(tmp_path / "r")["comparison"] is None
    assert headline_of(tmp_path / "r")["left_out"]["reasons"] == {"no load recorded": len(raw)}
    assert (
        f"Left out of every ratio and claim: {len(raw)} of {len(raw)} runs</strong> ({len(raw)} with no load recorded)"
    ) in section(html, "answer")


@pytest.mark.parametrize("seed_offset", [0, 1], ids=["rerun-same-seed", "rerun-new-seed"])
def test_a_loaded_run_is_left_out_counted_and_its_clean_rerun_in_the_block_used(tmp_path, fixture_records, seed_offset):
    """Block 3's Stan run of covtype was loaded (its ESS/s a tenth) and rerun clean in the same block; eight
    schools' block 3 Stan run was loaded and not rerun. The answer: covtype's rerun, eight schools without that
    block; the loaded runs counted, in the answer section, and still in the run table, marked. The runner reruns
    the same job, seed included (same draws): that rerun must not be dropped as a copy of the loaded run (the
    GPU campaign of 2026-11-27 lost two of five eight-schools blocks so)."""
    recs = five_blocks([r for r in fixture_records if r.model_id in TWO_MODELS])
    loaded = [r for r in recs if r.engine == "stan" and r.repeat == 3]
    rerun = next(r for r in loaded if r.model_id == TWO_MODELS[0])
    slowed = [replace(r, load=LOADED, metrics=replace(r.metrics, ess_per_s=r.metrics.ess_per_s / 10)) for r in loaded]
    again = replace(
        rerun, run_id="rerun", created="2026-12-09T00:00:00+00:00", sampler_seed=rerun.sampler_seed + seed_offset
    )
    html = build(write(tmp_path, [r for r in recs if r not in loaded] + slowed + [again]), tmp_path / "r").read_text()
    found = headline_of(tmp_path / "r")
    (tmp_path / "all-clean").mkdir()
    clean = headline_of(build(write(tmp_path / "all-clean", recs), tmp_path / "all-clean" / "r").parent)
    assert found["left_out"]["reasons"] == {"loaded": len(loaded)}
    assert (
        f"<strong>Left out of every ratio and claim: {len(loaded)} of {len(recs) + 1} runs</strong> "
        f"({len(loaded)} loaded)" in section(html, "answer")
    )
    covtype, eight = (found["models"][m] for m in TWO_MODELS)
    assert covtype["blocks"] == 5 and "rerun" in covtype["run_ids"][1]
    assert covtype["warm_ratios"] == clean["models"][TWO_MODELS[0]]["warm_ratios"]  # the loaded run nowhere
    assert eight["blocks"] == clean["models"][TWO_MODELS[1]]["blocks"] - 1
    assert not set(covtype["run_ids"][1] + eight["run_ids"][1]) & {r.run_id for r in loaded}
    assert pages(tmp_path / "r" / "index.html").count("(loaded: other processes kept 1.4 cores busy)") == len(loaded)


def test_a_superseded_campaign_is_left_out_and_counted(tmp_path, fixture_records, monkeypatch):
    campaign = fixture_records[0].campaign_id
    (tmp_path / "SUPERSEDED").write_text(
        f'[[superseded]]\nwhy = "timed under a bug"\nfixed_by = "0123abc"\ncampaigns = ["{campaign}"]\n'
    )
    entries = superseded.load(tmp_path / "SUPERSEDED")
    monkeypatch.setattr(superseded, "load", lambda: entries)
    html = build(write(tmp_path, fixture_records), tmp_path / "r").read_text()
    found = headline_of(tmp_path / "r")
    n = len(fixture_records)
    assert found["comparison"] is None and found["left_out"]["reasons"] == {"superseded": n}
    [entry] = found["left_out"]["superseded_entries"]
    assert entry["runs"] == n and entry["fixed_by"] == "0123abc" and entry["selector"] == f"campaigns {campaign}"
    assert f"{n} of {n} runs</strong> ({n} superseded)" in section(html, "answer")
    provenance = (tmp_path / "r" / "provenance.html").read_text()
    assert 'href="#superseded"' in section(provenance, "excluded") and 'href="provenance.html#excluded"' in html
    assert f"Superseded ({n} run(s), fixed by 0123abc): campaigns {campaign}: timed under a bug" in section(
        provenance, "superseded"
    )
    # every run still shown, marked
    assert pages(tmp_path / "r" / "index.html").count("superseded: timed under a bug (fixed by 0123abc)") == n


def test_runs_of_two_campaigns_are_never_paired(tmp_path, fixture_records):
    """Campaign A ran only NumPyro, campaign B only Stan, same model, settings and data: no ratio, and the mean
    says why. With both sides in both campaigns (A 5 blocks, B 3 with NumPyro 10× faster), the ratio is A's
    blocks alone, never a pair across campaigns, and says B was not pooled."""
    covtype = five_blocks([r for r in fixture_records if r.model_id == TWO_MODELS[0]])
    apart = [replace(r, campaign_id="A" if r.engine == "numpyro" else "B") for r in covtype]
    build(write(tmp_path, apart), tmp_path / "r")
    found = headline_of(tmp_path / "r")
    assert found["comparison"] is None
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    [cell] = [
        c
        for m in summary["regime_maps"]
        if m["pairing"] == "JAX-CPU vs Stan-CPU"
        for g in m["groups"]
        for row in g["rows"]
        if row["model_id"] == TWO_MODELS[0]
        for c in row["cells"]
    ]
    assert cell["state"] == "not measured"
    assert cell["text"] == "no block with valid runs of both in one campaign, with the same settings and data"

    b = [
        replace(
            r,
            campaign_id="B",
            run_id=f"{r.run_id}-B",
            sampler_seed=r.sampler_seed + 7,
            created="2027-01-01T00:00:00+00:00",
            metrics=replace(r.metrics, ess_per_s=r.metrics.ess_per_s * (10 if r.engine == "numpyro" else 1)),
        )
        for r in covtype
        if r.repeat < 3
    ]
    (tmp_path / "both").mkdir()
    build(write(tmp_path / "both", [replace(r, campaign_id="A") for r in covtype] + b), tmp_path / "both" / "r")
    [model] = headline_of(tmp_path / "both" / "r")["models"].values()
    by_block = {(r.engine, r.repeat): r.metrics.ess_per_s for r in covtype}
    assert model["campaign"] == "A" and model["blocks"] == 5 and model["other_pairings"] == 1
    assert model["warm_ratios"] == pytest.approx([by_block["numpyro", k] / by_block["stan", k] for k in range(5)])


def test_lanes_on_disjoint_cores_of_one_campaign_still_pair(tmp_path, fixture_records):
    """A GPU campaign runs its lanes at once on disjoint cores (NumPyro on 2, Stan on the other 14): the cores
    differ, the campaign's blocks are the same, so the runs pair."""
    covtype = five_blocks([r for r in fixture_records if r.model_id == TWO_MODELS[0]])
    lanes = [replace(r, cores=2 if r.engine == "numpyro" else 14) for r in covtype]
    build(write(tmp_path, lanes), tmp_path / "r")
    [model] = headline_of(tmp_path / "r")["models"].values()
    assert model["blocks"] == 5


def test_the_answer_sentence_names_every_machines_verdict_where_two_machines_differ():
    """Two machines with 5 blocks each at default size: one says faster, the other no clear difference. The first
    screen's sentence counts the model once, under "the machines differ", with each machine's verdict."""
    from stanjax.reports.first_screen import answer_sentence
    from stanjax.reports.headline import PAIRINGS
    from stanjax.reports.regimes import MEASURED

    def entry(machine, ratio, direction, size="default"):
        return {
            "state": MEASURED,
            "direction": direction,
            "ratio": stats.Ratio(*ratio, 5),
            "machine": machine,
            "size": size,
        }

    rows = [
        {
            "title": "Logistic regression",
            "entries": [
                entry("epyc-2core", (1.26, 1.13, 1.30), "faster"),
                entry("xeon-2core", (1.23, 0.994, 1.42), "no clear difference"),
                entry("xeon-2core", (1.85, 1.53, 1.92), "faster", size="small"),
            ],
        },
        {"title": "GP regression", "entries": []},
    ]
    sentence = answer_sentence(PAIRINGS[1], rows, pd.DataFrame())
    assert (
        "the machines differ on 1 model (Logistic regression: faster on epyc-2core, no clear difference on xeon-2core)"
    ) in sentence
    assert "JAX-CPU faster on" not in sentence and "no clear difference on Logistic" not in sentence
    assert "1.85" not in sentence and sentence.endswith("; 1 model(s) not measured.")  # the best-evidenced size only
    rows[0]["entries"][1] = entry("xeon-2core", (1.23, 1.1, 1.42), "faster")  # agreeing: one title, both machines
    assert (
        "faster on Logistic regression (1.26× (1.13–1.30×), epyc-2core; 1.23× (1.10–1.42×), xeon-2core)"
        in answer_sentence(PAIRINGS[1], rows, pd.DataFrame())
    )


def test_the_answer_sentence_summarises_a_direction_with_many_models_and_names_where_machines_differ():
    """Fifteen models, one of which two machines disagree on: the sentence gives the other fourteen's count and
    the range of their ratios with each end named (it stays on the first screen), and the model the machines
    disagree on once, with each machine's verdict; with three it lists each."""
    from stanjax.reports.first_screen import SENTENCE_DETAIL, answer_sentence
    from stanjax.reports.headline import PAIRINGS
    from stanjax.reports.regimes import MEASURED

    def entry(machine, ratio, direction):
        return {
            "state": MEASURED,
            "direction": direction,
            "ratio": stats.Ratio(*ratio, 5),
            "machine": machine,
            "size": "default",
        }

    rows = [
        {"title": f"Model {i}", "entries": [entry("epyc-2core", (1.5 + i, 1.2 + i, 1.9 + i), "faster")]}
        for i in range(15)
    ]
    rows[3]["entries"].append(entry("xeon-2core", (1.1, 0.9, 1.3), "no clear difference"))
    sentence = answer_sentence(PAIRINGS[1], rows, pd.DataFrame())
    # 14 faster; Model 3 counted once, apart: 15 models, 15 counted
    assert "JAX-CPU faster on 14 models, from 1.50× (Model 0, epyc-2core) to 15.5× (Model 14, epyc-2core)" in sentence
    assert (
        "the machines differ on 1 model (Model 3: faster on epyc-2core, no clear difference on xeon-2core)" in sentence
    )
    assert "Model 7" not in sentence
    few = answer_sentence(PAIRINGS[1], rows[:SENTENCE_DETAIL], pd.DataFrame())
    assert "Model 1 (2.50× (2.20–2.90×), epyc-2core)" in few and "differ" not in few and "figure" not in few


def test_a_failure_repeated_in_every_block_is_one_row(tmp_path, fixture_records):
    """Failed runs are grouped by machine, model, engine setup and status: the repeats listed, the first run's
    error shown, the others' last lines only where they differ (the first H200 campaign's 64 failed runs were a
    95 KB table of the same traceback)."""
    stan = sorted((r for r in fixture_records if r.engine == "stan"), key=lambda r: (r.model_id, r.repeat))
    model_id = stan[0].model_id
    failing = [r for r in stan if r.model_id == model_id][:2]
    assert len(failing) == 2 and failing[0].repeat != failing[1].repeat
    errors = {
        failing[
            0
        ].run_id: "Traceback\n  File w.py\n  File s.py, line 9\n    raise\nRuntimeError: Stan chain 1 failed (exit -11)"
    }
    errors[failing[1].run_id] = "Traceback\nRuntimeError: Stan chain 3 failed (exit -11)"
    recs = [
        replace(r, status="error", valid=False, error=errors[r.run_id]) if r.run_id in errors else r
        for r in fixture_records
    ]
    build(write(tmp_path, recs), tmp_path / "r")
    failed = section((tmp_path / "r" / "provenance.html").read_text(), "failed")
    rows = re.findall(r'<tr class="bad">(.*?)</tr>', failed, re.S)
    assert len(rows) == 1, rows
    assert f'<td>2</td><td class="text">{failing[0].repeat + 1}, {failing[1].repeat + 1}</td>' in rows[0]
    assert "Stan chain 1 failed" in rows[0] and "the others ended: RuntimeError: Stan chain 3 failed" in rows[0]
    assert "File s.py, line 9" in rows[0] and "File w.py" not in rows[0]  # the last lines; runs.csv.gz has them all


def test_a_maskell_row_the_common_basis_lacks_gets_its_own_machine(tmp_path, fixture_records):
    """The three Maskell rows share one basis (the machine where most of their kinds ran validly); a GPU box whose
    httpstan-CPU runs all failed (the first H200 campaigns) still answers "JAX-GPU ≈ 20× JAX-CPU" on its own basis,
    and says why."""
    box = "h200-16core"
    two_models = ("eight_schools-eight_schools_noncentered", "covtype_synth-logistic_regression")
    # fewer models than the CPU machine's, so that machine stays the common basis
    numpyro = five_blocks([r for r in fixture_records if r.engine == "numpyro" and r.model_id in two_models])
    machine = replace(numpyro[0].provenance.machine, gpu=["NVIDIA H200, 580.159.04, 143771 MiB"], cores=16)
    on_box = [replace(r, provenance=replace(r.provenance, machine=machine)) for r in numpyro]
    gpu = [
        replace(
            r,
            run_id=f"{r.run_id}-gpu",
            device="gpu",
            precision="float32",
            chain_method="vectorized",
            engine_info={**r.engine_info, "matmul_precision": "highest"},
            metrics=replace(r.metrics, ess_per_s=r.metrics.ess_per_s / 17),
        )
        for r in on_box
    ]
    html = build(write(tmp_path, [*five_blocks(fixture_records), *on_box, *gpu]), tmp_path / "r").read_text()
    rows = {anchor: verdict for anchor, _, verdict in claim_rows(html)}
    claims = section(html, "claims")
    assert f"On {box} at size tiny, this row&#39;s own basis (the other rows&#39; basis, " in claims, claims
    assert "has no valid JAX-GPU run)" in claims
    assert not rows["maskell-gpu-cpu"].startswith("not measured")
    assert rows["maskell-gpu-stan"].startswith("not measured")  # no machine ran both: still said so
    assert not rows["maskell-stan-cpu"].startswith("not measured")  # the common basis, as before


QUIET_LOAD = {"other_processes_cores": 0.01, "other_processes_share": 0.01, "loaded": False}


def _calibration(
    campaign_id: str, stan_ms: float, jax_ms: float, cpu: str = "Intel(R) Xeon(R) Processor", load=QUIET_LOAD
) -> dict:
    machine = {"cpu": cpu, "cores": 2, "cpu_id": {"family": "6", "model": "85", "vector": "avx2"}}
    sides = [
        {
            "side": side,
            "model_id": "covtype_synth-logistic_regression",
            "sizes": {"N": 2000, "D": 20},
            "ms_per_gradient": ms,
        }
        for side, ms in (("stan", stan_ms), ("jax", jax_ms))
    ]
    return {
        "schema_version": records.SCHEMA_VERSION,
        "kind": "measurement",
        "study": "calibration",
        "measure": "calibration",
        "campaign_id": campaign_id,
        "created": f"2026-11-2{len(campaign_id)}T10:00:00+00:00",
        "provenance": {"machine": machine, "command": "stanjax run --suite quick"},
        "sides": sides,
        **({"load": load} if load else {}),
    }


def test_two_machines_under_one_name_are_told_apart_by_their_calibrations(tmp_path, fixture_records):
    """The issue's two "xeon-2core" VMs: Stan's calibration gradient 1.7x apart is said beside the machines (one
    name, two machines' ratios); 5 % apart is not."""
    from stanjax.reports.machines import calibrations

    near = calibrations([_calibration("a", 0.030, 0.020), _calibration("bb", 0.0315, 0.020)])
    assert len(near["rows"]) == 2 and near["differ"] == []
    far = calibrations([_calibration("a", 0.030, 0.020), _calibration("bb", 0.051, 0.0205)])
    (sentence,) = far["differ"]
    assert sentence.startswith("xeon-2core: Stan's calibration gradient took 0.03 ms") and "1.70×" in sentence
    # Each side's fastest try: an older campaign's median of three Stan runs is read as their fastest
    median_kept = _calibration("bb", 0.051, 0.0205)
    median_kept["sides"][0]["runs_ms"] = [0.0312, 0.051, 0.052]
    assert calibrations([_calibration("a", 0.030, 0.020), median_kept])["differ"] == []
    other_cpu = calibrations([_calibration("a", 0.030, 0.020), _calibration("bb", 0.051, 0.02, cpu="AMD EPYC")])
    assert other_cpu["differ"] == []  # another name: another machine, said by its label already
    # One measured beside other work, or before loads were recorded, is listed and compared with nothing.
    loaded = {**QUIET_LOAD, "other_processes_share": 0.4, "loaded": True}
    for load in (loaded, None):
        kept = calibrations([_calibration("a", 0.030, 0.020), _calibration("bb", 0.051, 0.0205, load=load)])
        assert kept["differ"] == [] and kept["rows"][1]["load"] == ("loaded" if load else "not measured")
    results = tmp_path / "results"
    results.mkdir()
    write(results, fixture_records)
    (results / records.MEASUREMENTS_FILE).write_text(
        "".join(json.dumps(m) + "\n" for m in (_calibration("a", 0.030, 0.020), _calibration("bb", 0.051, 0.0205)))
    )
    build(results, tmp_path / "report")
    provenance = (tmp_path / "report" / "provenance.html").read_text()
    assert "Two machines under one name:" in provenance and "1.70×" in provenance


def test_time_to_result_counts_a_fresh_process_to_1000_effective_draws(fixture_records):
    """Start, imports, data, compilation and warmup once (wall - user + warmup), then the rest of the sample call
    grown to 1,000 effective draws at the run's ESS per draw; cold: the group's uncached compile in place."""
    from stanjax.reports.runs_table import tidy

    run = next(r for r in fixture_records if r.status == "ok" and r.valid)
    timings = replace(run.timings, warmup_s=2.0, sampling_s=3.5, user_s=6.0, compile_s=0.5, compile_cached=True)
    first = replace(run, wall_s=10.0, timings=timings, metrics=replace(run.metrics, min_ess_bulk=500.0))
    uncached = replace(
        first,
        run_id="uncached",
        repeat=first.repeat + 1,
        timings=replace(timings, compile_s=30.0, compile_cached=False),
    )
    frame = tidy([first, uncached]).set_index("run_id")
    assert frame.loc[first.run_id, "time_to_result_s"] == pytest.approx(10 - 6 + 2 + (6 - 2) * 1000 / 500)
    assert frame.loc[first.run_id, "time_to_result_cold_s"] == pytest.approx(14 + 30 - 0.5)
    assert frame.loc["uncached", "time_to_result_cold_s"] == pytest.approx(frame.loc["uncached", "time_to_result_s"])


def test_the_first_screen_sets_time_to_result_beside_each_ratio(report_today):
    html, _ = report_today
    answer = section(html, "answer")
    assert '<span class="tr">1,000 ESS: ' in answer and "which answers a one-off fit sooner" in answer


def test_the_roofline_says_how_far_a_gpu_gradient_is_from_its_floor_at_581012_rows():
    """The issue's H100 measurement: 0.40 ms a float64 gradient at 581,012 × 54 against the floor of the design
    read twice at 3.35 TB/s (0.15 ms): 2.67×, outside the 1.5× aim."""
    from stanjax.reports.roofline import figure

    machine = {"cpu": "AMD EPYC 7B13", "cores": 16, "gpu": ["NVIDIA H100 80GB HBM3, 580.1, 81559 MiB"]}

    def cost(n, ms):
        return {
            "measure": "gradient_cost",
            "model_id": "covtype_synth-logistic_regression",
            "side": "jax",
            "device": "gpu",
            "precision": "float64",
            "chains": 1,
            "threads": 1,
            "sizes": {"N": n, "D": 54},
            "ms_per_gradient": ms,
            "provenance": {"machine": machine, "command": "stanjax campaign gpu --calibrate"},
        }

    found = figure([cost(100_000, 0.09), cost(581_012, 0.40)])
    (note,) = found["notes"]
    assert note.endswith(
        "at 581,012 rows a gradient took 0.4 ms against a floor of 0.15 ms, 2.67× (outside the 1.5× aim)"
    )
    assert "floor, float64" in found["svg"]


def test_a_composed_ess_per_s_is_ess_per_gradient_times_gradients_per_second_and_set_beside_end_to_end(
    fixture_records,
):
    """Covtype's tiny runs (4 chains on a 2-core Xeon) against a measured gradient cost on that machine: composed =
    ESS per gradient (all the runs' gradients) × 2 chains at once × 1000 / ms, beside the measured ESS/s; a GPU
    batch of 4 chains on another machine: 4 × 1000 / ms, composed for the campaigns' setting where runs of it
    exist, and the JAX ÷ Stan ratio labelled composed."""
    from stanjax.reports import composed
    from stanjax.reports.runs_table import tidy

    covtype = [r for r in fixture_records if r.model_id == "covtype_synth-logistic_regression" and r.status == "ok"]
    from dataclasses import replace as with_fields

    as_campaign = [  # the 1,000 + 1,000 setting; Stan's fixture records predate their warmup's gradient count
        replace(
            r,
            config=with_fields(r.config, warmup=1000),
            metrics=replace(r.metrics, gradients_warmup=r.metrics.gradients_warmup or r.metrics.gradients_sampling),
        )
        for r in covtype
    ]
    runs = tidy(as_campaign)
    xeon = as_campaign[0].provenance.machine
    h100 = {"cpu": "AMD EPYC", "cores": 16, "gpu": ["NVIDIA H100 80GB HBM3, 580, 81559 MiB"]}

    def cost(machine, side, device, chains, threads, ms, cpu_threads):
        return {
            "measure": "gradient_cost",
            "model_id": covtype[0].model_id,
            "sizes": covtype[0].sizes,
            "side": side,
            "device": device,
            "precision": "float64",
            "chains": chains,
            "threads": threads,
            "cpu_threads": cpu_threads,
            "ms_per_gradient": ms,
            "provenance": {"machine": machine},
        }

    found = composed.rows(
        runs,
        [
            cost(records.to_builtins(xeon), "stan", "cpu", 1, 1, 0.01, 1),
            cost(h100, "jax", "gpu", 4, 1, 0.5, 2),
            cost(h100, "stan", "cpu", 1, 3, 0.004, 14),
        ],
    )
    by = {(r["machine"], r["side"]): r for r in found}
    stan = by[(xeon.label, "stan")]
    stan_runs = runs[runs.family == "stan"]
    per_gradient = (stan_runs.min_ess_bulk / (stan_runs.gradients_warmup + stan_runs.gradients_sampling)).median()
    (check,) = stan["validation"]
    assert check["composed"] == pytest.approx(per_gradient * 2 * 1000 / 0.01)  # 4 chains, 2 at once on 2 cores
    assert check["measured"] == pytest.approx(stan_runs.ess_per_s.median()) and check["runs"] == 2
    assert stan["composed"] == pytest.approx(per_gradient * 1 * 1000 / 0.01)  # the measurement's one core
    gpu = next(r for r in found if r["side"] == "jax")
    jax_runs = runs[runs.family != "stan"]
    jax_per_gradient = (jax_runs.min_ess_bulk / (jax_runs.gradients_warmup + jax_runs.gradients_sampling)).median()
    assert gpu["composed"] == pytest.approx(jax_per_gradient * 4 * 1000 / 0.5) and gpu["validation"] == []
    (ratio,) = composed.ratios(found)
    h100_stan = next(r for r in found if r["side"] == "stan" and r["machine"] != xeon.label)
    assert h100_stan["composed"] == pytest.approx(per_gradient * 4 * 1000 / 0.004)  # 14 cores hold 4 x 3 threads
    assert ratio["ratio"] == pytest.approx(gpu["composed"] / h100_stan["composed"])
    assert ratio["denominator"] == "Stan-CPU float64, 3 threads a chain, gradient inside its NUTS"


def test_the_first_screen_says_where_time_to_result_points_the_other_way(report):
    """The sentence beneath the answer counts the models whose first ratio's cell is marked ⇄ (time to result and
    ESS/s disagree), per pairing, and is absent where none is."""
    html, _ = report
    answer = section(html, "answer")
    marked = answer.count("⇄ ESS/s</b>")
    counted = [int(n) for n in re.findall(r"points the other way on (\d+) of \d+ models", answer)]
    assert sum(counted) == marked


def test_the_why_page_splits_jax_over_stan_with_nutpie_and_the_first_screen_names_nutpie_on_a_stan_program(
    tmp_path, fixture_records
):
    """nutpie runs as copies of the fixture's runs (nutpie-JAX of NumPyro's, nutpie-Stan of Stan's, same blocks):
    the gradient's part is the whole ratio and the sampler's 1×, and nutpie-Stan ÷ Stan is 1× on the first screen."""
    today = built_today(measured(fixture_records))
    copies = {"numpyro": ("nutpie_jax", "jax"), "stan": ("nutpie_stan", "bridgestan")}
    nutpie = [
        replace(r, engine=copies[r.engine][0], front_end=copies[r.engine][1], run_id=f"{r.run_id}-nutpie")
        for r in today
        if r.engine in copies
    ]
    index = build(write(tmp_path, [*today, *nutpie]), tmp_path / "r")
    why = (tmp_path / "r" / "why.html").read_text()
    split = why[why.index('id="decomposition"') : why.index('id="fairness"')]
    assert '<td class="text">1.00× so far (2 blocks; 5 needed)</td>' in split  # the sampler's part
    assert split.count("<tr>") > 2  # a row per model with ratios, beside the header
    first = index.read_text()
    assert '<p id="nutpie-stan" class="small"><strong>nutpie on your Stan program</strong>' in first
    assert "1.00× so far (2 blocks; 5 needed) on " in first
    # the nutpie pairings are a list of their own, their forest plots on a page of their own
    listed = pairings(index)
    sides = re.compile(r'data-numerator="([^"]+)" data-denominator="([^"]+)"')
    assert ("nutpie-JAX-CPU", "nutpie-Stan-CPU") in sides.findall(section(listed, "nutpie"))
    assert not any("nutpie" in a + b for a, b in sides.findall(section(listed, "headline")))
    assert not any("nutpie" in a + b for a, b in sides.findall(section(listed, "stan-side")))
    forests = {
        name: re.findall(r'<h3 id="forest-[^"]+">([^<]+)</h3>', (tmp_path / "r" / name).read_text())
        for name in ("forests.html", "forests-nutpie.html")
    }
    assert forests["forests.html"] and not any("nutpie" in title for title in forests["forests.html"])
    assert forests["forests-nutpie.html"] and all("nutpie" in title for title in forests["forests-nutpie.html"])
    plain = tmp_path / "plain"
    plain.mkdir()
    assert 'id="nutpie-stan"' not in build(write(plain, today), plain / "r").read_text()
    assert "No nutpie runs with a ratio in these records" in (plain / "r" / "why.html").read_text()


def test_a_regime_whose_mean_has_too_few_blocks_takes_its_models_own_verdicts():
    """Maskell on the H200: eight schools non-centred 50.9× slower over 5 blocks refutes "JAX-GPU ≈ 5× Stan-CPU"
    though its centred twin has 2 blocks (the regime's geometric mean then has 2): the regime's verdict is "not
    reproduced", naming the model it rests on; with no model of enough blocks it stays "insufficient data"."""
    from stanjax.reports.claim_verdicts import ratio_verdict
    from stanjax.reports.claims import regime_verdict

    def member(model_id, block_ratios):
        ratio = stats.median_ratio(np.asarray(block_ratios))
        return {
            "model_id": model_id,
            "entry": {"model_id": model_id, "warm_ratios": block_ratios},
            "flipped": False,
            "ratio": ratio,
            "verdict": ratio_verdict(ratio, 5.0, "default"),
        }

    five = member("eight_schools-eight_schools_noncentered", [1 / 50.9, 1 / 56.3, 1 / 37.2, 1 / 49.0, 1 / 52.0])
    two = member("gym_eight_schools-eight_schools_centered", [1 / 79.6, 1 / 80.1])
    verdict, evidence = regime_verdict([five, two], 5.0, "default")
    assert verdict == "not reproduced"
    assert evidence.startswith("eight_schools-eight_schools_noncentered 50.9× slower (")
    assert evidence.endswith("; 1 other model(s) with too few blocks")
    verdict, evidence = regime_verdict([two, member("fixed-gaussian_mixture_target", [0.5, 0.4])], 5.0, "default")
    assert verdict.startswith("insufficient data") and evidence == ""


def test_the_table_per_model_has_a_row_per_model_in_the_figures_order_with_the_runs_numbers(report_today):
    """One row per model of the CPU answer, every column's cell with its sort value; regimes in the crossover
    figure's order; a model's Stan ms per gradient is the figure's (both the median of the ratio's valid Stan
    runs); the model linked to its page."""
    import html as html_text

    from stanjax.reports.model_table import COLUMNS

    page, out = report_today
    table = section(page, "per-model")
    rows = re.findall(r'<tr class="([^"]+)">(.*?)</tr>', table.split("<tbody>")[1], re.S)
    cells = [re.findall(r'<td data-v="([^"]*)"[^>]*>(.*?)</td>', body, re.S) for _, body in rows]
    assert rows and all(len(c) == len(COLUMNS) for c in cells)
    summary = json.loads((out / "summary.json").read_text())
    titles = [html_text.unescape(re.sub("<[^>]+>", "", c[0][1])) for c in cells]
    assert len(titles) == len(set(titles)) and all('<a href="models/' in c[0][1] for c in cells)
    header = [h for _, h, _ in COLUMNS]
    ms = header.index("Stan ms / gradient")
    crossing = list(dict.fromkeys(p["regime"] for p in summary["crossover"]))
    assert crossing and list(dict.fromkeys(html_text.unescape(c[2][1]) for c in cells))[: len(crossing)] == crossing
    by_title = dict(zip(titles, cells))
    singles = [p for p in summary["crossover"] if p["members"] == 1]
    assert singles
    for p in singles:
        assert float(by_title[p["name"]][ms][0]) == pytest.approx(p["ms_per_gradient"], rel=1e-4), p["name"]
    assert {verdict for verdict, _ in rows} <= {"faster", "slower", "no-clear-difference", "no-verdict", "none"}
