"""The report in a real browser: headless Chromium (Debian's ``chromium`` + ``chromium-driver``, which
``make test`` installs when missing) loads it with no resource fetched, no failed load and no console error; at
1400 and 800 px it never scrolls sideways and shows the summary box on the first screen; every figure is drawn,
titled, with labelled axes. The width and first-screen checks run on the committed rendering of results/ too
(what readers open). Screenshots of the first screen: out/artifacts/report-1400.png and report-800.png (the
committed report), fixture-report-1400.png and fixture-report-800.png; out/artifacts/report.png is the whole
fixture page at 1400 px."""

import json
import os
import shutil
from pathlib import Path

import pytest

from models import ROOT
from reports.build import build

FIXTURES = Path(__file__).parent / "fixtures"
ARTIFACTS = ROOT / "out" / "artifacts"
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
MISSING = "Chromium or chromedriver not found (Debian: apt-get install chromium chromium-driver)"
SCREEN_HEIGHT = 900
COMMITTED = ROOT / "results" / "report" / "index.html"

if not (CHROMIUM and DRIVER) and os.environ.get("STANJAX_REQUIRE_BROWSER"):
    raise RuntimeError(MISSING + "; STANJAX_REQUIRE_BROWSER is set")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason=MISSING)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size=1400,{SCREEN_HEIGHT}",
                     "--disable-dev-shm-usage", "--hide-scrollbars"):
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


def load(driver, page: Path) -> dict:
    """Open a page; what it fetched, the console's warnings and errors, and the drawn size of each figure."""
    driver.get_log("browser")  # drop what an earlier page left
    driver.get_log("performance")
    driver.get(page.as_uri())
    requests = [json.loads(e["message"])["message"] for e in driver.get_log("performance")]
    return {
        "fetched": [m["params"]["request"]["url"] for m in requests if m["method"] == "Network.requestWillBeSent"
                    and m["params"]["request"]["url"] != page.as_uri()],
        "console": [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")],
        "figure_widths": driver.execute_script(
            "return [...document.querySelectorAll('figure svg')].map(s => s.getBoundingClientRect().width)"),
    }


# Per figure: its <title>, its drawn title, and for each of its axes the texts of the x and y labels.
FIGURE_TEXTS = """
return [...document.querySelectorAll('figure svg')].map(svg => ({
  title: ((svg.querySelector(':scope > title') || {}).textContent || '').trim(),
  drawn: ((svg.querySelector('[id="figure-title"]') || {}).textContent || '').trim(),
  axes: [...svg.querySelectorAll('g[id^="axes_"]')].map(ax => [
    (ax.querySelector('[id="x-label"]') || {}).textContent || '',
    (ax.querySelector('[id="y-label"]') || {}).textContent || ''])
}));
"""


def test_the_report_loads_cleanly_and_draws_every_figure_titled_with_labelled_axes(browser, page):
    browser.set_window_size(1400, SCREEN_HEIGHT)
    seen = load(browser, page)
    assert browser.title == "stanjax report"
    assert seen["fetched"] == [] and seen["console"] == []
    assert len(seen["figure_widths"]) >= 5 and min(seen["figure_widths"]) > 200
    figures = browser.execute_script(FIGURE_TEXTS)
    assert len(figures) == len(seen["figure_widths"])
    for figure in figures:
        assert figure["title"].strip() and figure["title"] == figure["drawn"], figure
        assert figure["axes"] and all(x.strip() and y.strip() for x, y in figure["axes"]), figure
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(height, 12000))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "report.png"))


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("which", ["fixture", "committed"])
def test_no_sideways_scroll_and_the_answer_on_the_first_screen(browser, page, which, width):
    if which == "committed" and not COMMITTED.exists():
        pytest.skip(f"no committed report at {COMMITTED} (make results-report)")
    browser.set_window_size(width, SCREEN_HEIGHT)
    seen = load(browser, page if which == "fixture" else COMMITTED)
    assert seen["fetched"] == [] and seen["console"] == []
    overflow = browser.execute_script(
        "const d = document.documentElement; return [d.scrollWidth, d.clientWidth, window.innerHeight, "
        "document.getElementById('answer').getBoundingClientRect().top]")
    scroll_width, client_width, inner_height, answer_top = overflow
    assert scroll_width <= client_width, f"the page scrolls sideways at {width} px: {scroll_width} > {client_width}"
    assert 0 <= answer_top < inner_height, "the summary box is not on the first screen"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = f"report-{width}.png" if which == "committed" else f"fixture-report-{width}.png"
    assert browser.save_screenshot(str(ARTIFACTS / name))


def test_the_check_sees_a_failed_load_a_console_error_and_sideways_scroll(browser, tmp_path):
    page = tmp_path / "broken.html"
    (tmp_path / "present.css").write_text("body { color: black; }")
    page.write_text('<!DOCTYPE html><html><head><title>t</title><link rel="stylesheet" href="present.css"></head>'
                    '<body><img src="missing.png"><script>console.error("planted")</script>'
                    '<table><tr><td style="min-width: 3000px">wide</td></tr></table></body></html>')
    browser.set_window_size(800, SCREEN_HEIGHT)
    seen = load(browser, page)
    assert any(url.endswith("present.css") for url in seen["fetched"])
    assert any("planted" in message for message in seen["console"])
    assert any("missing.png" in message for message in seen["console"])
    assert browser.execute_script("const d = document.documentElement; return d.scrollWidth > d.clientWidth")
