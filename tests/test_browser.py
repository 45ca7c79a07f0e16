"""The HTML sheet and key in a real browser: nothing wider than the page at any width, on screen or printed.

Driven by selenium (the maintained WebDriver binding, talking to Debian's chromium-driver; no browser
download) against Debian's headless chromium. .ci/run installs both; elsewhere the test is skipped
with the reason when chromium, chromedriver or selenium is missing.
"""

from __future__ import annotations

import os
import shutil

import pytest

from scalemath.problems import sets

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401
except ImportError:  # pragma: no cover - the test extra installs it
    selenium = None

needs_browser = pytest.mark.skipif(
    (CHROMIUM is None or DRIVER is None or selenium is None) and not os.environ.get("CI"),
    reason="needs chromium, chromedriver (Debian: apt-get install chromium chromium-driver) and selenium "
           "(the test extra); CI installs them and runs this test")

# every element's box must lie inside the page, and nothing may hide content behind a scroller
OVERFLOW = """
const W = document.documentElement.clientWidth, bad = [];
if (document.documentElement.scrollWidth > W) bad.push(['page', document.documentElement.scrollWidth, W]);
for (const el of document.body.querySelectorAll('*')) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) continue;
  const clipped = el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible';
  if (r.right > W + 0.5 || r.left < -0.5 || clipped)
    bad.push([el.tagName, el.className, Math.round(r.left), Math.round(r.right), W,
              (el.textContent || '').slice(0, 80)]);
}
return bad.slice(0, 5);
"""


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A key with the widest derivations: every sharding and training generator, plus a few others."""
    out = tmp_path_factory.mktemp("html") / "set"
    names = ["sharding_matmul_case", "sharding_gather_or_reduce", "training_fsdp_tp", "transformer_params",
             "inference_decode_step", "inference_speculative", "tpu_staged_copy", "matmul_critical_batch"]
    sets.write_set(sets.build_set(None, None, 3, generator_names=names), out, ("html",))
    return out


@needs_browser
@pytest.mark.parametrize("stem", ["solutions", "problems"])
@pytest.mark.parametrize("width,media", [(320, "screen"), (412, "screen"), (768, "screen"), (1280, "screen"),
                                         (816, "print")],
                         ids=["phone-320", "phone-412", "tablet", "desktop", "letter-print"])
def test_nothing_is_wider_than_the_page(browser, pages, stem, width, media):
    browser.set_window_size(width, 900)
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": media})
    try:
        browser.get((pages / f"{stem}.html").as_uri())
        assert browser.execute_script(OVERFLOW) == []
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})


@needs_browser
def test_every_derivation_result_is_visible(browser, pages):
    # the review's case: plan 1's time in the sharded-matmul key was hidden behind a scrollbar
    browser.set_window_size(1280, 900)
    browser.get((pages / "solutions.html").as_uri())
    hidden = browser.execute_script("""
      const out = [];
      for (const row of document.querySelectorAll('.chain .crow:last-child .rhs')) {
        const r = row.getBoundingClientRect();
        if (r.width < 1 || r.right > document.documentElement.clientWidth) out.push(row.textContent);
      }
      return [document.querySelectorAll('.chain').length, out];
    """)
    assert hidden[0] > 20 and hidden[1] == []


@needs_browser
def test_print_to_pdf_keeps_the_page_width(browser, pages):
    browser.set_window_size(1280, 900)
    browser.get((pages / "solutions.html").as_uri())
    pdf = browser.execute_cdp_cmd("Page.printToPDF", {"paperWidth": 8.5, "paperHeight": 11})
    assert len(pdf["data"]) > 10000
