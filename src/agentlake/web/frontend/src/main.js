// agentlake dashboard: chat over the graph runtime's WebSocket, the graph lighting up as its
// nodes run, the observer's live ops and stats, lessons, and the latest scenario run.
import { Chat } from "./chat.js";
import { $, el, getJSON } from "./dom.js";
import { GraphView } from "./graphview.js";
import { Hud } from "./hud.js";
import { Lessons } from "./lessons.js";
import { Ops } from "./ops.js";
import { Scenarios } from "./scenarios.js";
import { ensureSession, signOut } from "./session.js";
import { RuntimeSocket } from "./socket.js";

const state = { graph: null, session: null };
const graphView = new GraphView($("#cy"));
const hud = new Hud();
const ops = new Ops();
const lessons = new Lessons();
const scenarios = new Scenarios();

function showGraph(graph) {
  state.graph = graph.name;
  $("#graph-name").textContent = graph.name;
  $("#graph-name").title = `${graph.nodes.length} nodes, ${graph.edges.length} edges`;
  $("#graph-select").value = graph.name;
  graphView.show(graph);
}

const socket = new RuntimeSocket((event) => {
  if (event.type === "hello") {
    state.session = event.session;
    $("#model").textContent = `model: ${event.model}`;
    showGraph(event.graph);
  } else if (event.type === "trace") {
    const mine = event.session === state.session;
    if (event.event === "graph_switched") showGraph(event.data.graph);
    else if (event.event !== "end") graphView.light(event.node, event.event === "start" ? event.data.source : null);
    hud.traceEvent(event, mine);
    return;
  } else if (event.type === "hud") {
    hud.hud(event);
    return;
  }
  chat.handle(event);
  if (event.type === "done" || event.type === "error") hud.turnEnded();
}, (connection) => {
  $("#conn").dataset.state = connection;
  $("#conn-text").textContent = connection === "open" ? "connected" : connection;
});
const chat = new Chat(socket, state);

async function loadGraphs() {
  const select = $("#graph-select");
  const body = await getJSON("/api/graphs");
  select.replaceChildren(...body.graphs.map((graph) => el("option", { value: graph.name, text: `${graph.name} (${graph.nodes} nodes, ${graph.edges} edges)` })));
  select.value = body.active;
  select.addEventListener("change", async () => {
    try {
      showGraph(await getJSON("/api/graphs/active", { method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: select.value }) }));
    } catch (error) {
      hud.flag("error", error.message);
      select.value = state.graph;
    }
  });
}

for (const tab of document.querySelectorAll(".tabs button")) {
  tab.addEventListener("click", () => {
    for (const other of document.querySelectorAll(".tabs button")) other.setAttribute("aria-selected", String(other === tab));
    for (const pane of document.querySelectorAll(".tab")) pane.hidden = pane.dataset.tab !== tab.dataset.tab;
    if (tab.dataset.tab === "lessons") lessons.load();
    if (tab.dataset.tab === "scenarios") scenarios.load();
  });
}

function showSession(session) {
  const who = $("#who");
  if (!session.auth) {
    who.replaceChildren();
    return;
  }
  who.replaceChildren(el("span", { text: `${session.name || session.key_id} (${session.scope})`, title: session.name ? `${session.key_id}: the API key's fingerprint` : "The API key's fingerprint and scope" }),
    session.via === "session" ? el("button", { type: "button", class: "link", id: "signout", text: "sign out", onclick: () => signOut() }) : null);
}

// Before reconnecting the socket or the live ops, make sure the session is still alive (a
// refused WebSocket handshake looks like any other close): sign in again if it expired.
async function stillSignedIn() {
  try {
    showSession(await ensureSession());
  } catch {
    // the gateway is down: the reconnect itself will say so
  }
}

async function start() {
  showSession(await ensureSession());
  socket.beforeReconnect = stillSignedIn;
  ops.beforeReconnect = stillSignedIn;
  socket.connect();
  ops.start();
  await loadGraphs().catch((error) => hud.flag("error", `graphs: ${error.message}`));
}

start().catch((error) => hud.flag("error", error.message));
// Lessons and the scenario run are read when their tab is opened (and again each time).
// For tests and curious users: the live objects behind the page.
window.agentlakeDashboard = { state, graphView, chat, socket, ops, hud };
