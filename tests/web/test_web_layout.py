"""The dashboard at 900, 1280 and 1920 px wide in a real browser (Debian's chromium through
Playwright): no panel overlapping another, none squeezed, nothing cut off or pushed out of its
panel, the workspace table reachable to its last row; after a turn the HUD shows no leftover of
it; lessons read as the agents' prompts show them. Screenshots go to ``/tmp/agentlake-test-artifacts/``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from test_web_browser import ARGS, CHROMIUM, send, shot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (make browser)"
    ),
]

VIEWPORTS = {900: 800, 1280: 800, 1920: 1080}
MIN_PANEL_PX = 300

# What the layout looks like to a user, measured in the page: which regions overlap, which are
# too narrow, which elements stick out of their panel or have their text clipped (elements in a
# scrolling list are reachable by scrolling and are not counted), and whether the workspace
# shows the last row of its table once scrolled to the end.
LAYOUT = """() => {
  const box = (node) => node.getBoundingClientRect();
  const regions = {header: ".top", chat: ".panel.chat", graph: ".panel.center", side: ".panel.side"};
  const rects = Object.fromEntries(Object.entries(regions).map(([name, sel]) => [name, box(document.querySelector(sel))]));
  const names = Object.keys(rects);
  const overlaps = [];
  for (let i = 0; i < names.length; i++) for (let j = i + 1; j < names.length; j++) {
    const a = rects[names[i]], b = rects[names[j]];
    if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) overlaps.push(`${names[i]}/${names[j]}`);
  }
  const narrow = ["chat", "graph", "side"].filter((name) => rects[name].width < MIN_PX);
  const canvas = box(document.querySelector("#cy"));
  if (canvas.width < MIN_PX || canvas.height < 200) narrow.push(`graph canvas ${Math.round(canvas.width)}x${Math.round(canvas.height)}`);
  const describe = (node) => `${node.tagName.toLowerCase()}${node.id ? "#" + node.id : ""}.${[...node.classList].join(".")} "${(node.textContent || "").trim().slice(0, 30)}"`;
  const scrolls = (node) => ["auto", "scroll"].includes(getComputedStyle(node).overflowY) || ["auto", "scroll"].includes(getComputedStyle(node).overflowX);
  const inScroller = (node, root) => { for (let up = node.parentElement; up && up !== root; up = up.parentElement) if (scrolls(up)) return true; return false; };
  const cut = [];
  for (const region of Object.values(regions)) {
    const root = document.querySelector(region);
    const outer = box(root);
    for (const node of root.querySelectorAll("*")) {
      if (!node.getClientRects().length || inScroller(node, root) || node.closest("#cy")) continue;
      const r = box(node);
      if (!r.width && !r.height) continue;
      if (r.left < outer.left - 1 || r.right > outer.right + 1 || r.top < outer.top - 1 || r.bottom > outer.bottom + 1) cut.push(`${describe(node)} sticks out of ${region}`);
      else if (getComputedStyle(node).display !== "inline" && !scrolls(node) && node.scrollWidth > node.clientWidth + 1) cut.push(`${describe(node)} text clipped`);
    }
  }
  for (const item of document.querySelectorAll("#trace li")) {  // time, node and event always show
    const edge = box(item).right + 1;
    for (const part of item.querySelectorAll(".node, [class^=ev-]")) if (box(part).right > edge) cut.push(`trace ${describe(item)} cut before its event`);
  }
  const workspace = document.querySelector("#workspace");
  workspace.scrollTop = workspace.scrollHeight;
  const rows = workspace.querySelectorAll("tr");
  const last = rows.length ? box(rows[rows.length - 1]) : null;
  const shown = box(workspace);
  return {
    overflow_x: document.documentElement.scrollWidth - window.innerWidth,
    overlaps, narrow, cut,
    table_rows: rows.length,
    last_row_visible: !!last && last.bottom <= shown.top + workspace.clientHeight + 1 && last.top >= shown.top - 1,
  };
}""".replace("MIN_PX", str(MIN_PANEL_PX))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


def _open(browser: Any, live_server: str, width: int) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": width, "height": VIEWPORTS[width]})
    page = context.new_page()
    page.goto(live_server + "/")
    page.wait_for_selector("#conn[data-state=open]")
    page.wait_for_function("() => window.agentlakeDashboard.graphView.cy.nodes().length === 7")
    return context, page


@pytest.fixture(scope="module", params=sorted(VIEWPORTS), ids=lambda width: f"{width}px")
def layout(request: pytest.FixtureRequest, browser: Any, live_server: str) -> dict[str, Any]:
    """The layout at one width after a turn that fills the workspace with a table, the HUD with
    its trace and the ops list with ops (one page per width; its screenshot saved)."""
    width = request.param
    context, page = _open(browser, live_server, width)
    try:
        send(page, "show me the welders")
        page.wait_for_selector(".msg.assistant:not(.streaming) .path", timeout=15000)
        page.wait_for_selector("#workspace .ctl-table tr", timeout=15000)
        page.wait_for_selector("#ops li", timeout=15000)
        shot(page, f"width-{width}")
        return page.evaluate(LAYOUT)
    finally:
        context.close()


def test_no_page_wide_horizontal_scroll(layout: dict[str, Any]) -> None:
    assert layout["overflow_x"] <= 0


def test_no_panel_overlaps_another(layout: dict[str, Any]) -> None:
    assert layout["overlaps"] == []


def test_no_panel_is_squeezed(layout: dict[str, Any]) -> None:
    assert layout["narrow"] == []


def test_nothing_is_cut_off(layout: dict[str, Any]) -> None:
    assert layout["cut"] == []


def test_the_workspace_table_shows_its_last_row(layout: dict[str, Any]) -> None:
    assert layout["table_rows"] > 1
    assert layout["last_row_visible"] is True


def test_the_hud_keeps_nothing_of_a_finished_turn(browser: Any, live_server: str) -> None:
    context, page = _open(browser, live_server, 1280)
    try:
        page.evaluate("""() => {
            window.__hud = [];
            new MutationObserver(() => window.__hud.push(document.querySelector('#hud-status').textContent))
                .observe(document.querySelector('#hud-status'), {childList: true, characterData: true, subtree: true});
        }""")
        send(page, "set up an order workflow")
        page.wait_for_selector(".msg.assistant:not(.streaming) .path", timeout=15000)
        page.wait_for_timeout(300)  # anything still in flight for this turn
        during = page.evaluate("() => window.__hud")
        status = page.inner_text("#hud-status")
        plans = page.locator("#flags .flag.plan").count()
        shot(page, "hud-after-turn")
    finally:
        context.close()
    assert any("calling" in text for text in during)  # the turn did show its calls ...
    assert status == "idle"  # ... and they are gone once it ended
    assert plans == 0


def test_a_lesson_reads_as_the_prompts_show_it(browser: Any, live_server: str) -> None:
    lesson = {
        "kind": "lesson",
        "lesson": {
            "trigger": "When tool.find_workers times out",
            "action": "narrow the call with role and state",
            "domain": "staffing",
        },
    }
    answer = httpx.post(f"{live_server}/log", json=lesson, timeout=10)
    assert answer.status_code == 200, answer.text
    context, page = _open(browser, live_server, 1280)
    try:
        page.click("button[data-tab='lessons']")
        page.wait_for_selector("#lessons li[data-lesson-id]")
        texts = page.locator("#lessons li[data-lesson-id] div").all_inner_texts()
        shot(page, "lessons")
    finally:
        context.close()
    assert "When tool.find_workers times out: narrow the call with role and state" in texts
    assert not [text for text in texts if text.startswith("When When")]
