// The latest scenario run: leaderboard and learning curve (/api/scenarios/latest).
import { $, el, getJSON } from "./dom.js";

const pct = (value) => (value === null || value === undefined ? "" : `${(value * 100).toFixed(1)}%`);

export class Scenarios {
  constructor() { this.box = $("#scenarios"); }

  async load() {
    try {
      const run = await getJSON("/api/scenarios/latest");
      const head = el("tr", {}, ["#", "staffer", "score", "fill", "pass^k", "gain"].map((h) => el("th", { text: h })));
      const rows = run.leaderboard.map((row) => el("tr", {},
        el("td", { text: row.rank }), el("td", { text: row.staffer }), el("td", { text: row.score === null ? "" : row.score.toFixed(1) }),
        el("td", { text: pct(row.fill_rate) }), el("td", { text: pct(row.pass_k) }),
        el("td", { text: row.gain_points === null ? "" : `${row.gain_points > 0 ? "+" : ""}${row.gain_points}` })));
      const chart = el("div", { class: "chart" });
      if (run.curve_svg) {
        // The SVG is drawn by the server (agentlake.scenarios.report), which escapes every label.
        chart.innerHTML = run.curve_svg;
      }
      this.box.replaceChildren(el("h3", { text: `Run ${run.run_id}` }), el("table", {}, el("thead", {}, head), el("tbody", {}, rows)),
        el("h3", { text: "Learning curve (fill rate per batch)" }), chart);
    } catch (error) {
      this.box.replaceChildren(el("div", { class: "empty-note", text: error.status === 404 ? error.message : `scenarios unavailable: ${error.message}` }));
    }
  }
}
