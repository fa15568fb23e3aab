// The observer's live ops (SSE from /observer/ops/stream) and its stats (/observer/stats).
import { $, el, getJSON, time } from "./dom.js";

const MAX_OPS = 200;

export class Ops {
  constructor() {
    this.list = $("#ops");
    this.stats = $("#stats");
    this.count = 0;
    this.statsTimer = null;
    this.beforeReconnect = null; // an async check (e.g. the session) awaited before reopening
  }

  start() {
    this.stream();
    this.refreshStats();
    setInterval(() => this.refreshStats(), 10000);
  }

  stream() {
    const source = new EventSource("/observer/ops/stream?backlog=40");
    source.addEventListener("op", (message) => this.add(JSON.parse(message.data), true));
    source.onerror = () => {
      this.renderStatsNote("live stream reconnecting…");
      // EventSource retries by itself, except after an error status (a 401 once the session
      // expired): then the page reopens it once it is signed in again.
      if (source.readyState === EventSource.CLOSED) {
        setTimeout(async () => {
          if (this.beforeReconnect) await this.beforeReconnect();
          this.stream();
        }, 2000);
      }
    };
  }

  add(op, fresh) {
    this.count += 1;
    const agent = op.agent_id ? ` · ${op.agent_id}` : "";
    const item = el("li", { class: `${op.success ? "" : "fail"}${fresh ? " fresh" : ""}`, title: `${op.endpoint}${agent}\n${op.input_summary || ""}${op.error ? `\nerror: ${op.error}` : ""}`, dataset: { endpoint: op.endpoint } },
      el("span", { class: "muted", text: time(op.ts) }),
      el("span", { class: "src", text: op.source }),
      el("span", { class: "ep", text: `${op.endpoint}${op.success ? "" : " ✕"}` }),
      el("span", { class: "ms", text: `${Number(op.duration_ms).toFixed(1)} ms` }));
    this.list.prepend(item);
    while (this.list.children.length > MAX_OPS) this.list.lastChild.remove();
    clearTimeout(this.statsTimer);
    this.statsTimer = setTimeout(() => this.refreshStats(), 800);
  }

  async refreshStats() {
    try {
      const stats = await getJSON("/observer/stats");
      const cell = (value, label) => el("div", { class: "stat" }, el("b", { text: value }), el("span", { text: label }));
      const ms = (value) => (value === null || value === undefined ? "–" : `${Number(value).toFixed(1)} ms`);
      this.stats.replaceChildren(cell(stats.total, "ops"), cell(stats.failures, "failed"),
        cell(ms(stats.latency_p50_ms), "p50"), cell(ms(stats.latency_p95_ms), "p95"));
    } catch (error) {
      this.renderStatsNote(`stats unavailable: ${error.message}`);
    }
  }

  renderStatsNote(text) {
    this.stats.replaceChildren(el("div", { class: "muted small", text }));
  }
}
