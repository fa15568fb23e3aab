"""The report's learning curve in a real browser: Debian's chromium draws it and ``getBBox``
says where each label landed. Skipped, saying so, without ``/usr/bin/chromium``."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from test_scenario_report import crowded_results

from agentlake.scenarios.report import render_report, text_width

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (make browser)"
    ),
]

_BOXES = """() => {
    const svg = document.querySelector("svg[aria-label^='Learning curve']");
    const box = (t) => { const b = t.getBBox(); return {
        cls: t.getAttribute("class"), text: t.textContent, size: Number(t.getAttribute("font-size")),
        left: b.x, top: b.y, right: b.x + b.width, bottom: b.y + b.height, width: b.width}; };
    return {
        width: svg.viewBox.baseVal.width, height: svg.viewBox.baseVal.height,
        labels: [...svg.querySelectorAll("text.point-label, text.legend-label")].map(box),
    };
}"""


def test_in_chromium_no_label_overlaps_another_and_the_legend_fits() -> None:
    from playwright.sync_api import sync_playwright

    html = render_report(crowded_results(), plan={"run_id": "crowded", "backend": "inline"})
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_content(html)  # the report is self-contained: nothing to fetch
            drawn = page.evaluate(_BOXES)
        finally:
            browser.close()
    labels = drawn["labels"]
    assert [b["cls"] for b in labels].count("point-label") == 7
    assert [b["cls"] for b in labels].count("legend-label") == 7
    for a, b in itertools.combinations(labels, 2):
        apart = a["right"] <= b["left"] or b["right"] <= a["left"]
        apart = apart or a["bottom"] <= b["top"] or b["bottom"] <= a["top"]
        assert apart, (a, b)
    for box in labels:
        assert 0 <= box["left"] <= box["right"] <= drawn["width"], box
        assert 0 <= box["top"] <= box["bottom"] <= drawn["height"], box
        # The width the report sized the chart from holds the text as the browser draws it.
        assert box["width"] <= text_width(box["text"], box["size"]) + 0.5, box
