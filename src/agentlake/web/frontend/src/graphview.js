// The active graph drawn with Cytoscape.js; a node lights up while it runs.
import cytoscape from "cytoscape";

// Roles are unique in a graph, so each has a fixed place: the message flows left to right,
// memory sits above the thinker, the sensor below.
const PLACES = {
  input: [0, 1], director: [1, 0], sensor: [1, 2], thinker: [2, 1],
  output: [3, 0.35], memorizer: [2, -0.55], ui: [3, 1.75],
};
const ROLE_COLOURS = {
  input: "#ddf4ff", director: "#fbefff", thinker: "#f0e7ff", output: "#dafbe1",
  ui: "#fff8c5", memorizer: "#eaeef2", sensor: "#ffebe9",
};
const EDGE = { data: "#0969da", context: "#1a7f37", control: "#bc4c00" };
const LIT_MS = 700;

export class GraphView {
  constructor(container) {
    this.lit = {};
    this.timers = {};
    this.cy = cytoscape({
      container,
      minZoom: 0.4,
      maxZoom: 2.5,
      autoungrabify: false,
      style: [
        { selector: "node", style: {
          shape: "round-rectangle", width: 104, height: 46, "background-color": "data(colour)",
          "border-width": 1.5, "border-color": "#57606a", label: "data(label)", "text-wrap": "wrap",
          "text-valign": "center", "font-size": 12, "font-family": "system-ui, sans-serif", color: "#1b1f24",
          "transition-property": "background-color, border-color, border-width", "transition-duration": "0.15s" } },
        { selector: "node[?llm]", style: { "border-style": "double", "border-width": 5, "border-color": "#6e40c9" } },
        { selector: "node.lit", style: { "background-color": "#ffd33d", "border-color": "#9a6700", "border-width": 4 } },
        { selector: "edge", style: {
          width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle", "arrow-scale": 1.1,
          "line-color": "data(colour)", "target-arrow-color": "data(colour)", opacity: 0.85,
          "transition-property": "width, opacity", "transition-duration": "0.15s" } },
        { selector: "edge[type = 'context']", style: { "line-style": "dashed" } },
        { selector: "edge[type = 'control']", style: { "line-style": "dotted", width: 2.5 } },
        { selector: "edge.flow", style: { width: 5, opacity: 1 } },
      ],
    });
    new ResizeObserver(() => { this.cy.resize(); this.cy.fit(undefined, 24); }).observe(container);
  }

  show(graph) {
    this.graph = graph;
    const nodes = graph.nodes.map((node) => {
      const [col, row] = PLACES[node.role] || [4, 1];
      return { group: "nodes", data: { id: node.id, label: `${node.id}\n${node.type}`, colour: ROLE_COLOURS[node.role] || "#fff", llm: node.uses_llm, role: node.role }, position: { x: col * 160, y: row * 110 } };
    });
    const edges = graph.edges.map((edge) => ({
      group: "edges", data: { id: `${edge.source}->${edge.target}:${edge.type}`, source: edge.source, target: edge.target, type: edge.type, colour: EDGE[edge.type] },
    }));
    this.cy.elements().remove();
    this.cy.add([...nodes, ...edges]);
    this.cy.layout({ name: "preset" }).run();
    this.cy.fit(undefined, 24);
  }

  light(nodeId, sourceId) {
    const node = this.cy.getElementById(nodeId);
    if (!node || node.empty()) return false;
    this.lit[nodeId] = (this.lit[nodeId] || 0) + 1;
    node.addClass("lit");
    clearTimeout(this.timers[nodeId]);
    this.timers[nodeId] = setTimeout(() => node.removeClass("lit"), LIT_MS);
    if (sourceId) {
      const edges = this.cy.edges().filter((edge) => edge.data("source") === sourceId && edge.data("target") === nodeId);
      edges.addClass("flow");
      setTimeout(() => edges.removeClass("flow"), LIT_MS);
    }
    return true;
  }
}
