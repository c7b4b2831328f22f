"""The report in a real browser, as a reader opens it: headless Chromium (Debian's ``chromium`` +
``chromium-driver``, which ``make test`` installs when missing) loads its pages with no resource fetched, no failed
load and no console error; every figure is drawn, titled, with labelled axes. At 1400 and 800 px the page never
scrolls sideways and its first screen opens with what a reader needs first: the CPU answer (when is JAX on a CPU
faster than Stan) with its crossover figure (each model family's ratio against the work of a gradient: axes and
legend within one screen), then the GPU answer, then the regime summary; every text of the first screen's figures
at 11 px or more, whole (never cut with "…"), inside the figure and over no other text; its text prints no missing
value (nan, None, inf) and no ratio below 1 (a slower ratio reads "35× slower"). These run on the committed rendering of results/ too (what readers
open), whose index stays under 300 KB. Screenshots of the first screen: out/artifacts/report-1400.png and
report-800.png (the committed report), fixture-report-1400.png and fixture-report-800.png; out/artifacts/report.png
and pairings.png, forests.png, figures.png, studies.png are the whole fixture pages at 1400 px."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from stanjax.models import ROOT
from stanjax.reports.build import build
from stanjax.runner.core import records

FIXTURES = ROOT / "tests" / "fixtures"
ARTIFACTS = ROOT / "out" / "artifacts"
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
MISSING = "Chromium or chromedriver not found (Debian: apt-get install chromium chromium-driver)"
SCREEN_HEIGHT = 900
COMMITTED = ROOT / "results" / "report" / "index.html"
PAGE_LIMIT = 250_000  # bytes of the committed index: it opens at once
HEIGHT_LIMIT = 9_000  # px of the committed index at 1400 px: ten screens
# What a reader needs on the first screen: each element's top and bottom, and the viewport's height.
FIRST_SCREEN = """
const box = sel => { const e = document.querySelector(sel); if (!e) return null;
                     const r = e.getBoundingClientRect(); return [r.top, r.bottom]; };
return {sentence: box('#jax-cpu-vs-stan-cpu-answer'), figure: box('#crossover-figure'),
        title: box('#crossover-figure [id$="-figure-title"]'), gpu: box('#jax-gpu-vs-stan-cpu-answer'),
        summary: box('#regime-summary'), height: window.innerHeight,
        text: document.querySelector('#answer').innerText};  // the answer's text: a failed run's error may say None
"""
# Every text of the figures arguments[0] selects (a CSS selector of their <svg>s): its words, its drawn size in px
# (font size in the SVG's units times the SVG's scale on screen), whether it lies inside its figure, and inside any
# other text of it (overlap).
FIGURE_TEXTS_DRAWN = """
return [...document.querySelectorAll(arguments[0])].flatMap(svg => {
  const box = svg.getBoundingClientRect();
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim());
  const rects = texts.map(t => t.getBoundingClientRect());
  const within = (r, b) => r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
  const cross = (r, b) => r.left < b.right - 1 && b.left < r.right - 1 && r.top < b.bottom - 1 && b.top < r.bottom - 1;
  return texts.map((t, i) => { const m = t.getScreenCTM();
    return {text: t.textContent.trim(), px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),
            inside: within(rects[i], box), overlaps: rects.some((r, j) => j !== i && cross(rects[i], r))}; });
});
"""
MIN_TEXT_PX = 11
MISSING_VALUE = re.compile(r"\b(nan|NaN|None|inf)\b")
RATIO_BELOW_ONE = re.compile(r"(?<![\d.,])0\.\d+×")  # "0.0283×": a ratio below 1 written as such

if not (CHROMIUM and DRIVER) and os.environ.get("STANJAX_REQUIRE_BROWSER"):
    raise RuntimeError(MISSING + "; STANJAX_REQUIRE_BROWSER is set")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason=MISSING)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        f"--window-size=1400,{SCREEN_HEIGHT}",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The report of the tiny suite and the three tiny studies."""
    results = tmp_path_factory.mktemp("results")
    shutil.copy(FIXTURES / "tiny_repeats2.jsonl", results / "runs.jsonl")
    shutil.copytree(FIXTURES / "studies_tiny", results / "studies")
    return build(results, tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def page_today(tmp_path_factory) -> Path:
    """The tiny suite's report with its Stan runs as today's bundled Stan made them: its first screen has ratios,
    the crossover figure and numbers in the table per model."""
    from tests.reports.test_report import built_today, measured, write

    results = tmp_path_factory.mktemp("results-today")
    write(results, built_today(measured(records.read(FIXTURES / "tiny_repeats2.jsonl"))))
    return build(results, tmp_path_factory.mktemp("report-today"))


def load(driver, page: Path) -> dict:
    """Open a page; what it fetched, the console's warnings and errors, and the drawn size of each figure."""
    driver.get_log("browser")  # drop what an earlier page left
    driver.get_log("performance")
    driver.get(page.as_uri())
    requests = [json.loads(e["message"])["message"] for e in driver.get_log("performance")]
    return {
        "fetched": [
            m["params"]["request"]["url"]
            for m in requests
            if m["method"] == "Network.requestWillBeSent" and m["params"]["request"]["url"] != page.as_uri()
        ],
        "console": [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")],
        "figure_widths": driver.execute_script(
            "return [...document.querySelectorAll('figure svg')].map(s => s.getBoundingClientRect().width)"
        ),
    }


# Per figure: its <title>, its drawn title, and for each of its axes the texts of the x and y labels.
FIGURE_TEXTS = """
return [...document.querySelectorAll('figure svg')].map(svg => ({
  title: ((svg.querySelector(':scope > title') || {}).textContent || '').trim(),
  drawn: ((svg.querySelector('[id$="-figure-title"]') || {}).textContent || '').trim(),
  axes: [...svg.querySelectorAll('g[id*="-axes_"]')].map(ax => [
    (ax.querySelector('[id$="-x-label"]') || {}).textContent || '',
    (ax.querySelector('[id$="-y-label"]') || {}).textContent || ''])
}));
"""


@pytest.mark.parametrize(
    "name, title, least_figures",
    [
        ("index.html", "stanjax report", 0),  # the fixture's Stan is httpstan's build: no crossover figure
        ("pairings.html", "stanjax report: all pairings", 0),
        ("pairings-nutpie.html", "stanjax report: pairings, nutpie", 0),
        ("pairings-stan-side.html", "stanjax report: pairings, Stan side", 0),
        ("regimes.html", "stanjax report: regime map", 0),
        ("why.html", "stanjax report: why", 0),
        ("provenance.html", "stanjax report: provenance", 0),
        ("forests.html", "stanjax report: forest plots, All pairings", 0),
        ("forests-nutpie.html", "stanjax report: forest plots, nutpie", 0),
        ("forests-stan-side.html", "stanjax report: forest plots, Stan side", 0),
        ("figures.html", "stanjax report: figures", 2),
        ("accuracy.html", "stanjax report: accuracy against time", 0),
        ("studies.html", "stanjax report: scaling studies", 3),
        ("glossary.html", "stanjax report: glossary", 0),
    ],
)
def test_the_report_loads_cleanly_and_draws_every_figure_titled_with_labelled_axes(
    browser, page, name, title, least_figures
):
    browser.set_window_size(1400, SCREEN_HEIGHT)
    seen = load(browser, page.parent / name)
    assert browser.title == title
    assert seen["fetched"] == [] and seen["console"] == []
    assert len(seen["figure_widths"]) >= least_figures and min(seen["figure_widths"], default=201) > 200
    figures = browser.execute_script(FIGURE_TEXTS)
    assert len(figures) == len(seen["figure_widths"])
    for figure in figures:
        assert figure["title"].strip() and figure["title"] == figure["drawn"], figure
        assert figure["axes"] and all(x.strip() and y.strip() for x, y in figure["axes"]), figure
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(height, 12000))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(
        str(ARTIFACTS / ("report.png" if name == "index.html" else name.replace("html", "png")))
    )


def test_a_model_page_loads_cleanly_and_links_back(browser, page):
    model_page = sorted((page.parent / "models").glob("*.html"))[0]
    browser.set_window_size(800, SCREEN_HEIGHT)
    seen = load(browser, model_page)
    assert seen["fetched"] == [] and seen["console"] == []
    assert browser.execute_script("return document.querySelector('a[href=\"../index.html\"]') !== null")
    assert browser.execute_script("const d = document.documentElement; return d.scrollWidth <= d.clientWidth")


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("which", ["fixture", "committed"])
def test_no_sideways_scroll_and_the_answer_on_the_first_screen(browser, page, which, width):
    if which == "committed" and not COMMITTED.exists():
        pytest.skip(f"no committed report at {COMMITTED} (make results-report)")
    browser.set_window_size(width, SCREEN_HEIGHT)
    seen = load(browser, page if which == "fixture" else COMMITTED)
    assert seen["fetched"] == [] and seen["console"] == []
    scroll_width, client_width = browser.execute_script(
        "const d = document.documentElement; return [d.scrollWidth, d.clientWidth]"
    )
    assert scroll_width <= client_width, f"the page scrolls sideways at {width} px: {scroll_width} > {client_width}"
    first = browser.execute_script(FIRST_SCREEN)
    sentence, figure, height = first["sentence"], first["figure"], first["height"]
    assert sentence and 0 <= sentence[0] < height / 2, f"the CPU answer starts at {width} px: {sentence}"
    if which == "committed" or figure:  # the fixture's Stan is httpstan's build: no ratio over today's, no figure
        assert first["title"] and sentence[1] <= first["title"][0] < height, f"its figure on screen one: {first}"
        assert figure[1] - figure[0] <= height, f"the figure, axes and legend, within one screen: {figure}"
    assert first["gpu"] and (figure or sentence)[1] <= first["gpu"][0], f"the GPU answer follows: {first['gpu']}"
    assert first["summary"] and first["gpu"][1] <= first["summary"][0], "the regime summary follows them"
    assert not MISSING_VALUE.search(first["text"]), MISSING_VALUE.search(first["text"])
    assert not RATIO_BELOW_ONE.search(first["text"]), RATIO_BELOW_ONE.search(first["text"])
    assert not unreadable(browser.execute_script(FIGURE_TEXTS_DRAWN, "#crossover-figure svg")), f"at {width} px"
    if which == "committed":
        assert COMMITTED.stat().st_size <= PAGE_LIMIT, f"{COMMITTED}: {COMMITTED.stat().st_size:,} bytes"
        tall = browser.execute_script("return document.documentElement.scrollHeight")
        assert width != 1400 or tall <= HEIGHT_LIMIT, f"the index is {tall} px tall at 1400 px: {HEIGHT_LIMIT} at most"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = f"report-{width}.png" if which == "committed" else f"fixture-report-{width}.png"
    assert browser.save_screenshot(str(ARTIFACTS / name))


def unreadable(texts: list[dict]) -> list[str]:
    """What is wrong with the first screen's figure's texts: one under MIN_TEXT_PX, cut ("…"), outside the
    figure, or over another text."""
    return [
        f"{t['text']!r}: {why}"
        for t in texts
        for why, wrong in (
            (f"{t['px']:.1f} px", t["px"] < MIN_TEXT_PX),
            ("cut", t["text"].endswith("…")),
            ("outside the figure", not t["inside"]),
            ("over another text", t["overlaps"]),
        )
        if wrong
    ]


@pytest.mark.parametrize("name", ["index.html", "figures.html", "forests.html", "studies.html", "accuracy.html"])
def test_every_text_of_every_figure_is_readable_at_800_px(browser, page_today, name):
    """At 800 px every text of every figure of a page is drawn at 11 px or more, whole, inside its figure and over
    no other text: a figure scaled down to the screen's width shrinks its text with it."""
    browser.set_window_size(800, SCREEN_HEIGHT)
    load(browser, page_today.parent / name)
    texts = browser.execute_script(FIGURE_TEXTS_DRAWN, "figure svg")
    assert texts or name != "figures.html"
    assert not unreadable(texts), (name, unreadable(texts)[:5])


def test_a_click_on_a_header_sorts_the_table_per_model(browser, page_today):
    """Each numeric column sorts by its values, empty cells last, a second click the other way; the model column
    by its name."""
    browser.set_window_size(1400, SCREEN_HEIGHT)
    load(browser, page_today)
    column = """const th = [...document.querySelectorAll('#per-model-table th')].find(h => h.textContent === arguments[0]);
      th.click(); return [...document.querySelectorAll('#per-model-table tbody tr')].map(r => r.cells[th.cellIndex].dataset.v);"""
    for header, key in (("Stan ms / gradient", float), ("model", str)):
        up = browser.execute_script(column, header)
        values = [key(v) for v in up if v != ""]
        assert len(values) >= 2 and values == sorted(values) and up[len(values) :] == [""] * (len(up) - len(values))
        down = browser.execute_script(column, header)
        assert [key(v) for v in down if v != ""] == sorted(values, reverse=True), header


def test_the_first_screen_check_sees_an_answer_pushed_down_a_nan_and_a_ratio_below_one(browser, page, tmp_path):
    """Planted: a tall block before the answer, a "nan" and a "0.0283×" in the text, and in the answer's figure a
    text drawn small, cut, outside the figure and over another: each check sees its fault."""
    html = page.read_text().replace(
        '<section id="answer" class="answer">',
        '<div style="height: 2000px"></div><section id="answer" class="answer"><p>0.0283× nan</p>',
        1,
    )
    planted = page.parent / "planted.html"
    planted.write_text(html)
    browser.set_window_size(1400, SCREEN_HEIGHT)
    load(browser, planted)
    first = browser.execute_script(FIRST_SCREEN)
    assert first["sentence"][0] > first["height"] / 2
    assert MISSING_VALUE.search(first["text"]) and RATIO_BELOW_ONE.search(first["text"])
    figures = (page.parent / "figures.html").read_text()
    planted_texts = '<text x="-40" y="12" style="font-size: 4px">a regime a…</text><text x="-40" y="12">over</text>'
    start = figures.index(">", figures.index("<svg", figures.index('<section id="answer-figure">'))) + 1
    planted = page.parent / "planted-figures.html"
    planted.write_text(figures[:start] + planted_texts + figures[start:])
    load(browser, planted)
    found = unreadable(browser.execute_script(FIGURE_TEXTS_DRAWN, "#answer-figure svg"))
    assert {"'a regime a…': cut", "'a regime a…': outside the figure", "'over': over another text"} <= set(found)
    assert any(line.startswith("'a regime a…': ") and line.endswith(" px") for line in found), found
    assert not any(line.startswith(("'JAX", "'NumPyro", "'Stan")) for line in found), found  # only the planted


def test_the_check_sees_a_failed_load_a_console_error_and_sideways_scroll(browser, tmp_path):
    page = tmp_path / "broken.html"
    (tmp_path / "present.css").write_text("body { color: black; }")
    page.write_text(
        '<!DOCTYPE html><html><head><title>t</title><link rel="stylesheet" href="present.css"></head>'
        '<body><img src="missing.png"><script>console.error("planted")</script>'
        '<table><tr><td style="min-width: 3000px">wide</td></tr></table></body></html>'
    )
    browser.set_window_size(800, SCREEN_HEIGHT)
    seen = load(browser, page)
    assert any(url.endswith("present.css") for url in seen["fetched"])
    assert any("planted" in message for message in seen["console"])
    assert any("missing.png" in message for message in seen["console"])
    assert browser.execute_script("const d = document.documentElement; return d.scrollWidth > d.clientWidth")
