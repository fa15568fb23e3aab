// The latest scenario run: leaderboard and learning curve (/api/scenarios/latest).
import { $, el, getJSON } from "./dom.js";

// Okabe-Ito, as in the scenarios' report.html: distinguishable with colour-vision deficiencies.
const PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];
const SVG = "http://www.w3.org/2000/svg";
const pct = (value) => (value === null || value === undefined ? "" : `${(value * 100).toFixed(1)}%`);

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

// Fill rate per batch, one line per staffer, drawn for the panel's width.
function curveChart(curve, batches) {
  const width = 360, height = 180, left = 36, right = 24, top = 10, bottom = 24;
  const plotW = width - left - right, plotH = height - top - bottom;
  const x = (i) => left + (batches.length > 1 ? (plotW * i) / (batches.length - 1) : plotW / 2);
  const y = (v) => top + plotH * (1 - v);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Learning curve: fill rate per batch" });
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    chart.append(svg("line", { x1: left, x2: left + plotW, y1: y(tick), y2: y(tick), stroke: "#e5e7eb" }));
    chart.append(svg("text", { x: left - 5, y: y(tick) + 4, "font-size": 10, "text-anchor": "end", fill: "#57606a" }, `${tick * 100}%`));
  }
  batches.forEach((batch, i) => chart.append(svg("text", { x: x(i), y: height - 6, "font-size": 10, "text-anchor": "middle", fill: "#57606a" }, `batch ${batch}`)));
  Object.entries(curve).forEach(([staffer, values], s) => {
    const colour = PALETTE[s % PALETTE.length];
    chart.append(svg("polyline", { points: values.map((v, i) => `${x(i)},${y(v)}`).join(" "), fill: "none", stroke: colour, "stroke-width": 2 }));
    values.forEach((v, i) => {
      const dot = svg("circle", { cx: x(i), cy: y(v), r: 3.5, fill: colour });
      dot.append(svg("title", {}, `${staffer}, batch ${batches[i]}: ${pct(v)}`));
      chart.append(dot);
    });
  });
  const legend = el("ul", { class: "curve-legend" }, Object.entries(curve).map(([staffer, values], s) => {
    const gain = values.length ? 100 * (values[values.length - 1] - values[0]) : 0;
    return el("li", {}, el("span", { class: "swatch", style: `background:${PALETTE[s % PALETTE.length]}` }),
      `${staffer} (${gain >= 0 ? "+" : ""}${gain.toFixed(0)} pts)`);
  }));
  return el("div", { class: "chart" }, chart, legend);
}

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
      this.box.replaceChildren(el("h3", { text: `Run ${run.run_id}` }), el("table", { class: "board" }, el("thead", {}, head), el("tbody", {}, rows)),
        el("h3", { text: "Learning curve: fill rate per batch" }), run.batches.length ? curveChart(run.learning_curve, run.batches) : el("p", { class: "muted", text: "No batches yet." }));
    } catch (error) {
      this.box.replaceChildren(el("div", { class: "empty-note", text: error.status === 404 ? error.message : `scenarios unavailable: ${error.message}` }));
    }
  }
}
