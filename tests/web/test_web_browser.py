"""The dashboard in a real browser: Playwright drives Debian's chromium against ``agentlake serve``
(a subprocess on 127.0.0.1 over a small generated lake, with the built-in demo model).

Each test saves a screenshot under ``$TMPDIR/agentlake-test-artifacts/`` (``/tmp/...``: tests
write nothing into the checkout). Playwright never downloads a browser of
its own here: the tests use ``/usr/bin/chromium`` and are skipped, saying so, without it.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(tempfile.gettempdir()) / "agentlake-test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (make browser)"
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, live_server: str) -> Iterator[Any]:
    """A fresh page (a new session) at 1280x800, connected; fails the test on a page error."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(live_server + "/")
    opened.wait_for_selector("#conn[data-state=open]")
    opened.wait_for_function("() => window.agentlakeDashboard.graphView.cy.nodes().length === 7")
    yield opened
    context.close()
    assert errors == []


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"))


def send(page: Any, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def test_a_message_gets_a_streamed_reply(page: Any) -> None:
    # Record every text the reply bubble shows while it streams.
    page.evaluate("""() => {
        window.__seen = [];
        new MutationObserver(() => {
            const bubble = document.querySelector('.msg.assistant.streaming');
            if (bubble) window.__seen.push(bubble.textContent);
        }).observe(document.querySelector('#messages'), {childList: true, subtree: true, characterData: true});
    }""")
    send(page, "how many forklift operators are in CA?")
    page.wait_for_selector(".msg.assistant:not(.streaming) .path")
    reply = page.inner_text(".msg.assistant")
    assert re.match(r"There (is|are) \d+ Forklift Operator workers? in CA", reply), reply
    assert "planned by the director" in reply
    partials = page.evaluate("() => window.__seen")
    assert len(set(partials)) >= 3, partials  # it arrived in pieces, not at once
    assert all(reply.startswith(partial) for partial in partials if partial)
    # The query result is on the workspace as a table.
    assert page.inner_text(".ctl-table th") == "workers"
    shot(page, "streamed-reply")


def test_an_answer_marked_wrong_under_it_is_recorded_for_the_learner(page: Any, live_server: str) -> None:
    send(page, "how many forklift operators are in CA?")
    page.wait_for_selector(".msg.assistant .feedback button:text('Wrong')")
    answer_id = page.get_attribute(".msg.assistant .feedback", "data-answer-id")

    page.click(".msg.assistant .feedback button:text('Wrong')")
    page.fill(".msg.assistant .feedback .expected", "7")
    page.click(".msg.assistant .feedback button:text('Send')")
    page.wait_for_selector(".msg.assistant .feedback:has-text('Marked wrong (it should be 7)')")

    shot(page, "feedback")
    ops = httpx.get(f"{live_server}/observer/ops", params={"endpoint": "ask.feedback", "limit": 100}).json()[
        "ops"
    ]
    assert [(op["attributes"]["answer_id"], op["attributes"]["expected"]) for op in ops] == [(answer_id, "7")]


def test_a_generated_button_moves_its_state_machine_locally(page: Any, live_server: str) -> None:
    send(page, "set up an order workflow")
    page.wait_for_selector("button.ctl-button.go")
    assert page.inner_text(".ctl-label") == "order: new"
    model_calls = len(
        httpx.get(f"{live_server}/observer/ops", params={"source": "llm", "limit": 1000}).json()["ops"]
    )

    page.click("button[data-action='go:order:packed']")
    page.wait_for_selector(".ctl-label:text('order: packed')")
    assert page.inner_text(".msg.note") == "order: new → packed (moved in the page, no model call)"
    assert page.inner_text("button.ctl-button.go") == "ship"
    after = httpx.get(f"{live_server}/observer/ops", params={"source": "llm", "limit": 1000}).json()["ops"]
    assert len(after) == model_calls  # the transition needed no model
    shot(page, "local-transition")


def test_count_and_switch_buttons_change_in_the_page_without_a_model_call(
    page: Any, live_server: str
) -> None:
    send(page, "set up a counter")
    page.wait_for_selector("button.ctl-button.local[data-action='inc:visitors']")
    model_calls = len(
        httpx.get(f"{live_server}/observer/ops", params={"source": "llm", "limit": 1000}).json()["ops"]
    )

    page.click("button[data-action='inc:visitors']")
    page.wait_for_selector(".ctl-label[data-value='visitors']:text('visitors: 1')")
    page.click("button[data-action='inc:visitors']")
    page.wait_for_selector(".ctl-label[data-value='visitors']:text('visitors: 2')")
    page.click("button[data-action='toggle:lights']")
    page.wait_for_selector(".ctl-label[data-value='lights']:text('lights: on')")

    assert page.inner_text(".msg.note >> nth=-1") == "lights: on (changed in the page, no model call)"
    after = httpx.get(f"{live_server}/observer/ops", params={"source": "llm", "limit": 1000}).json()["ops"]
    assert len(after) == model_calls  # the clicks needed no model
    shot(page, "local-counter")


def test_on_its_tick_the_page_reports_a_drift_and_gets_its_controls_again(page: Any) -> None:
    assert page.evaluate("() => window.agentlakeDashboard.chat.tickS") == 5  # graph_sensor_tick_s
    send(page, "set up a counter")
    page.click("button[data-action='inc:visitors']")
    page.wait_for_selector(".ctl-label[data-value='visitors']:text('visitors: 1')")
    page.evaluate("() => window.agentlakeDashboard.chat.startTick(0.3)")

    # Something outside the dashboard's code removes a control: the next tick reports what the
    # page really shows, the sensor flags the mismatch and the ui sends the controls again.
    page.evaluate("() => document.querySelector(\".ctl-label[data-value='visitors']\").remove()")
    page.wait_for_selector(".ctl-label[data-value='visitors']:text('visitors: 1')", timeout=5000)
    page.wait_for_selector("#flags .flag:has-text('controls mismatch')")
    shot(page, "tick-resend")


def test_graph_nodes_light_up_as_they_run(page: Any) -> None:
    lit = "(id) => window.agentlakeDashboard.graphView.cy.getElementById(id).hasClass('lit')"
    assert not page.evaluate(lit, "thinker")
    send(page, "how many workers are there per state?")
    page.wait_for_function(f"() => ({lit})('thinker')", timeout=15000)
    shot(page, "node-lit")
    page.wait_for_selector(".msg.assistant:not(.streaming) .path")
    counts = page.evaluate("() => window.agentlakeDashboard.graphView.lit")
    assert {"input", "director", "thinker", "output", "ui", "memorizer"} <= set(counts)
    # Lit only while running: the class is taken off again.
    page.wait_for_function(f"() => !({lit})('thinker')")


def test_a_new_op_appears_in_the_live_ops_panel(page: Any) -> None:
    page.wait_for_selector("#stats .stat")
    mine = "#ops li[data-endpoint='graph.turn'][title*='how many welders are in OH?']"
    assert page.locator(mine).count() == 0
    send(page, "how many welders are in OH?")
    page.wait_for_selector(mine, timeout=15000)
    item = page.locator(mine)
    assert "fresh" in (item.get_attribute("class") or "")  # highlighted as it arrived
    assert "graph.turn" in item.inner_text()
    assert "agent" in item.inner_text()
    # The turn's model calls arrived too, recorded as the thinker's and the director's.
    assert page.locator("#ops li[data-endpoint='llm.chat'][title*='graph.director']").count() >= 1
    # The page's own loading (its assets, session and graph reads) is not among the ops.
    own = ("GET /", "GET /static/{name}", "GET /api/session", "GET /api/graphs")
    assert [page.locator(f"#ops li[data-endpoint='{e}']").count() for e in own] == [0, 0, 0, 0]
    shot(page, "live-ops")


# --- with API keys configured: the page asks for a key once, then works on its session cookie ---


@pytest.fixture
def keyed_context(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    yield context
    context.close()


def test_the_dashboard_asks_for_a_key_once_then_works_on_its_session(
    keyed_context: Any, keyed_live_server: Any
) -> None:
    keys = keyed_live_server.keys
    page = keyed_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(keyed_live_server.url + "/")
    page.wait_for_selector("#signin[open]")
    assert page.get_attribute("#conn", "data-state") == "connecting"  # nothing connects signed out
    shot(page, "sign-in")

    page.fill("#signin-key", "not-the-key")
    page.press("#signin-key", "Enter")
    page.wait_for_selector("#signin-error:text('unknown API key')")
    assert page.locator("#signin[open]").count() == 1

    page.fill("#signin-key", keys["read"])
    page.press("#signin-key", "Enter")
    page.wait_for_selector("#conn[data-state=open]")  # the WebSocket, on the cookie
    page.wait_for_function("() => window.agentlakeDashboard.graphView.cy.nodes().length === 7")
    assert page.locator("#signin[open]").count() == 0
    assert page.inner_text("#who span") == "read-user (read)"
    page.wait_for_selector("#session[data-owner='read-user']")  # the chat session is hers

    # The session is an HttpOnly, SameSite=Strict cookie that is not the key.
    (cookie,) = [c for c in keyed_context.cookies() if c["name"] == "agentlake_session"]
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert keys["read"] not in cookie["value"]
    assert "agentlake_session" not in page.evaluate("() => document.cookie")  # no script reads it

    # A turn streams over the socket and its op arrives over the observer's event stream.
    send(page, "how many welders are in OH?")
    page.wait_for_selector(".msg.assistant:not(.streaming) .path", timeout=15000)
    page.wait_for_selector("#ops li[data-endpoint='graph.turn']", timeout=15000)
    page.wait_for_selector("#stats .stat")
    page.click("button[data-tab='lessons']")
    page.wait_for_selector("#lesson-count:text('lessons')")
    # A read key cannot switch graphs: the page says why and keeps the graph.
    page.select_option("#graph-select", "minimal")
    page.wait_for_selector("#flags .flag:text(\"scope 'write'\")")
    assert page.inner_text("#graph-name") == "default"
    shot(page, "signed-in")

    # A reload keeps the session: no second prompt.
    page.reload()
    page.wait_for_selector("#conn[data-state=open]")
    assert page.locator("#signin[open]").count() == 0
    assert errors == []


def test_signing_out_asks_again_and_no_key_is_logged_or_recorded(
    keyed_context: Any, keyed_live_server: Any
) -> None:
    keys = keyed_live_server.keys
    page = keyed_context.new_page()
    page.goto(keyed_live_server.url + "/")
    page.fill("#signin-key", keys["write"])
    page.press("#signin-key", "Enter")
    page.wait_for_selector("#conn[data-state=open]")
    assert "(write)" in page.inner_text("#who")
    page.select_option("#graph-select", "minimal")  # a write key may
    page.wait_for_function("() => document.querySelector('#graph-name').textContent === 'minimal'")
    page.select_option("#graph-select", "default")
    page.wait_for_function("() => document.querySelector('#graph-name').textContent === 'default'")

    page.click("#signout")
    page.wait_for_selector("#signin[open]")
    assert [c for c in keyed_context.cookies() if c["name"] == "agentlake_session"] == []

    ops = httpx.get(
        f"{keyed_live_server.url}/observer/ops",
        params={"source": "gateway", "limit": 1000},
        headers={"X-API-Key": keys["read"]},
    ).json()["ops"]
    assert any(op["endpoint"] == "POST /api/session" for op in ops)
    recorded = " ".join(f"{op['input_summary']} {op['output_summary']} {op['error']}" for op in ops)
    log = keyed_live_server.log_text()
    assert "POST /api/session" in log  # the access log is on, and shows the sign-ins ...
    for key in keys.values():
        assert key not in recorded
        assert key not in log  # ... but never a key
