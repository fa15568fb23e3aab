// The chat panel: streamed replies, notes, errors, and the workspace of controls.
import { $, el } from "./dom.js";

const EXAMPLES = ["hi", "how many forklift operators are in CA?", "how many workers are there per state?", "set up an order workflow"];
// Actions the server resolves by itself, with no model call: a transition, a count, a switch.
const LOCAL = /^(go|inc|dec|toggle):/;
// No input (keys, pointer, wheel) for this long and the tick tells the sensor the page is idle.
const IDLE_MS = 60000;
const PATHS = { reflex: "reflex: answered without the thinker", director: "planned by the director, then the thinker", thinker: "thinker" };

export class Chat {
  constructor(socket, state) {
    this.socket = socket;
    this.state = state; // shared: { graph }
    this.messages = $("#messages");
    this.workspace = $("#workspace");
    this.streaming = null;
    this.waiting = false;
    $("#composer").addEventListener("submit", (event) => {
      event.preventDefault();
      const input = $("#prompt");
      const text = input.value.trim();
      if (!text || this.waiting) return;
      input.value = "";
      this.ask({ type: "message", text }, text);
    });
    this.welcome = el("div", { class: "welcome small" }, el("p", { text: "Ask about the workers in the lake, or try one of these:" }),
      EXAMPLES.map((text) => el("button", { class: "ctl-button", type: "button", text, onclick: () => !this.waiting && this.ask({ type: "message", text }, text) })));
    this.messages.append(this.welcome);
    document.addEventListener("visibilitychange", () => {
      this.socket.send({ type: "presence", state: document.visibilityState === "hidden" ? "hidden" : "visible" });
    });
    this.lastInput = Date.now();
    this.idle = false;
    this.lastReport = null;
    this.timer = null;
    this.tickS = 0;
    for (const kind of ["keydown", "pointerdown", "wheel"]) {
      document.addEventListener(kind, () => {
        this.lastInput = Date.now();
        if (this.idle) {
          this.idle = false;
          this.socket.send({ type: "presence", state: "visible" });
        }
      }, { passive: true });
    }
  }

  // The sensor's tick (graph_sensor_tick_s, from hello): report what the page shows when it
  // changed since the last report, and say once when the page has gone idle.
  startTick(seconds) {
    clearInterval(this.timer);
    this.tickS = seconds;
    this.timer = seconds > 0 ? setInterval(() => this.tick(), seconds * 1000) : null;
  }

  tick() {
    const report = this.report();
    if (JSON.stringify(report) !== this.lastReport) this.sendReport(report);
    if (!this.idle && Date.now() - this.lastInput >= IDLE_MS) {
      this.idle = true;
      this.socket.send({ type: "presence", state: "idle" });
    }
  }

  // What is really on screen: each control's id, and what it says (a label's text, a button's,
  // a table's title, columns and row count).
  report() {
    const shown = [...this.workspace.querySelectorAll("[data-control-id]")].map((node) => {
      const id = node.dataset.controlId;
      if (node.classList.contains("ctl-table")) {
        const columns = [...node.querySelectorAll("thead th")].map((th) => th.textContent.slice(0, 80)).slice(0, 12);
        const title = node.querySelector(".title");
        return { id, kind: "table", text: (title ? title.textContent : "").slice(0, 200), columns, rows: node.querySelectorAll("tbody tr").length };
      }
      return { id, kind: node.tagName === "BUTTON" ? "button" : "label", text: node.textContent.slice(0, 200) };
    });
    return { type: "workspace", graph: this.state.graph, controls: shown.map((item) => item.id), shown: shown.slice(0, 60) };
  }

  sendReport(report) {
    this.lastReport = JSON.stringify(report);
    this.socket.send(report);
  }

  ask(event, shown) {
    this.welcome.remove();
    this.add("user", shown);
    this.setWaiting(true);
    this.socket.send(event);
  }

  setWaiting(waiting) {
    this.waiting = waiting;
    $("#send").disabled = waiting;
  }

  add(kind, text) {
    const bubble = el("div", { class: `msg ${kind}`, text });
    this.messages.append(bubble);
    this.messages.scrollTop = this.messages.scrollHeight;
    return bubble;
  }

  handle(event) {
    switch (event.type) {
      case "hello":
        // The session and who it belongs to (a proxy's user, the key's name or its fingerprint).
        $("#session").textContent = event.owner ? `${event.session} · ${event.owner}` : event.session;
        $("#session").dataset.owner = event.owner || "";
        this.startTick(event.tick_s || 0);
        if (event.controls && event.controls.length) this.renderControls(event.controls);
        break;
      case "delta":
        if (!this.streaming) this.streaming = this.add("assistant streaming", "");
        this.streaming.textContent += event.text;
        this.messages.scrollTop = this.messages.scrollHeight;
        break;
      case "done": {
        const bubble = this.streaming || (event.text ? this.add("assistant", event.text) : null);
        this.streaming = null;
        if (bubble) {
          bubble.classList.remove("streaming");
          bubble.textContent = event.text || bubble.textContent;
          if (event.path) bubble.append(el("span", { class: "path", text: PATHS[event.path] || event.path }));
          if (event.answer_id) bubble.append(this.feedback(event.answer_id));
        }
        this.setWaiting(false);
        break;
      }
      case "controls":
        this.renderControls(event.controls);
        break;
      case "transition":
        this.add("note", `${event.machine}: ${event.from} → ${event.to} (moved in the page, no model call)`);
        break;
      case "value":
        this.add("note", `${event.text} (changed in the page, no model call)`);
        break;
      case "feedback": {
        const row = this.messages.querySelector(`[data-answer-id="${CSS.escape(event.answer_id)}"]`);
        const said = event.right ? "right" : event.expected ? `wrong (it should be ${event.expected})` : "wrong";
        if (row) row.replaceChildren(el("span", { class: "muted small", text: `Marked ${said}: the learner will read it.` }));
        break;
      }
      case "error":
        this.add("error", event.message);
        break;
      default:
    }
  }

  // Buttons under an answer that looked data up: right, or wrong with what it should have been.
  feedback(answerId) {
    const send = (right, expected) => this.socket.send({ type: "feedback", answer_id: answerId, right, expected: expected || null });
    const expected = el("input", { class: "expected", type: "text", maxlength: "200", placeholder: "what should it be? (optional)" });
    const wrongForm = el("form", { class: "feedback-wrong", hidden: true, onsubmit: (event) => { event.preventDefault(); send(false, expected.value.trim()); } },
      expected, el("button", { class: "ctl-button", type: "submit", text: "Send" }));
    return el("div", { class: "feedback", dataset: { answerId } },
      el("button", { class: "ctl-button", type: "button", title: "This answer is right", text: "Right", onclick: () => send(true) }),
      el("button", { class: "ctl-button", type: "button", title: "This answer is wrong", text: "Wrong", onclick: () => { wrongForm.hidden = false; expected.focus(); } }),
      wrongForm);
  }

  renderControls(controls) {
    this.workspace.replaceChildren();
    for (const control of controls) this.workspace.append(this.control(control));
    if (!controls.length) this.workspace.append(el("p", { class: "muted small empty", text: "No controls." }));
    $("#workspace-count").textContent = controls.length ? `${controls.length} controls` : "";
    // Tell the server what is really on screen: the sensor compares it with what it sent.
    this.sendReport(this.report());
  }

  control(control) {
    if (control.kind === "label") {
      const dataset = control.value ? { controlId: control.id, value: control.value } : { controlId: control.id };
      return el("span", { class: "ctl-label", dataset, text: control.text });
    }
    if (control.kind === "button") {
      const go = control.action.startsWith("go:");
      const local = LOCAL.test(control.action);
      return el("button", {
        class: `ctl-button${go ? " go" : local ? " local" : ""}`,
        type: "button",
        title: local ? `${control.action} (in the page, no model call)` : control.action.slice(4),
        dataset: { controlId: control.id, action: control.action },
        text: control.label,
        onclick: (event) => {
          if (local) {
            event.currentTarget.disabled = true;
            this.socket.send({ type: "action", action: control.action });
          } else if (!this.waiting) {
            this.ask({ type: "action", action: control.action }, control.action.slice(4));
          }
        },
      });
    }
    const head = el("tr", {}, control.columns.map((column) => el("th", { text: column })));
    const rows = control.rows.map((row) => el("tr", {}, row.map((value) => el("td", { text: value === null ? "" : String(value), title: value === null ? "" : String(value) }))));
    const more = control.total_rows > control.rows.length ? el("div", { class: "muted small", text: `${control.rows.length} of ${control.total_rows} rows shown` }) : null;
    return el("div", { class: "ctl-table", dataset: { controlId: control.id } },
      el("div", { class: "title", text: control.title || "table" }),
      el("table", {}, el("thead", {}, head), el("tbody", {}, rows)), more);
  }
}
