// The HUD under the graph: flags (audits, mismatches, idle returns, plans) and the trace log.
import { $, el, time } from "./dom.js";

const MAX_TRACE = 200;
const QUIET = new Set(["end"]);

export class Hud {
  constructor() {
    this.trace = $("#trace");
    this.flags = $("#flags");
    this.status = $("#hud-status");
  }

  traceEvent(event, mine) {
    if (QUIET.has(event.event)) return;
    const data = event.data || {};
    const detail = Object.entries(data).filter(([key]) => key !== "graph")
      .map(([key, value]) => `${key}=${typeof value === "object" ? JSON.stringify(value) : value}`).join(" ");
    const item = el("li", { class: mine ? "" : "muted", title: detail },
      `${time(event.ts)} `, el("span", { class: "node", text: event.node }), " ",
      el("span", { class: `ev-${event.event}`, text: event.event }), detail ? ` ${detail}` : "");
    this.trace.append(item);
    while (this.trace.children.length > MAX_TRACE) this.trace.firstChild.remove();
    this.trace.scrollTop = this.trace.scrollHeight;
  }

  hud(event) {
    this.status.textContent = `${event.node}: ${event.message}`;
    if (event.flag) this.flag(event.flag, event.message);
    else if (event.node === "director") this.flag("plan", event.message, "plan");
  }

  // A turn ended (its reply or its error arrived): what was under way is over. The plan chip
  // and "thinker: calling ..." described that turn only; audit flags stay until pushed out.
  turnEnded() {
    this.status.textContent = "idle";
    for (const chip of this.flags.querySelectorAll(".flag.plan")) chip.remove();
  }

  flag(kind, message, cls = "") {
    const chip = el("span", { class: `flag ${cls}`, title: message, dataset: { flag: kind }, text: `${kind.replace(/_/g, " ")}: ${message}` });
    this.flags.prepend(chip);
    while (this.flags.children.length > 4) this.flags.lastChild.remove();
  }
}
