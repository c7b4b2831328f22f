"""The report in a real browser: headless Chromium (Debian's ``chromium`` + ``chromium-driver``, which
``make test`` installs when missing) loads it with no resource fetched, no failed load and no console
error, draws every figure, and leaves a screenshot in out/artifacts/report.png."""

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

if not (CHROMIUM and DRIVER) and os.environ.get("STANJAX_REQUIRE_BROWSER"):
    raise RuntimeError(MISSING + "; STANJAX_REQUIRE_BROWSER is set")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason=MISSING)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,1000",
                     "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


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


def test_the_report_loads_cleanly_and_draws_every_figure(browser, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURES / "tiny_repeats2.jsonl", results / "runs.jsonl")
    shutil.copytree(FIXTURES / "studies_tiny", results / "studies")
    index = build(results, tmp_path / "report")
    seen = load(browser, index)
    assert browser.title == "stanjax report"
    assert seen["fetched"] == [] and seen["console"] == []
    assert len(seen["figure_widths"]) >= 5 and min(seen["figure_widths"]) > 200
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1300, min(height, 12000))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "report.png"))


def test_the_check_sees_a_failed_load_and_a_console_error(browser, tmp_path):
    page = tmp_path / "broken.html"
    (tmp_path / "present.css").write_text("body { color: black; }")
    page.write_text('<!DOCTYPE html><html><head><title>t</title><link rel="stylesheet" href="present.css"></head>'
                    '<body><img src="missing.png"><script>console.error("planted")</script></body></html>')
    seen = load(browser, page)
    assert any(url.endswith("present.css") for url in seen["fetched"])
    assert any("planted" in message for message in seen["console"])
    assert any("missing.png" in message for message in seen["console"])
