// The lessons browser: /lessons (filtered by status) and one lesson's history.
import { $, el, getJSON } from "./dom.js";

export class Lessons {
  constructor() {
    this.list = $("#lessons");
    this.detail = $("#lesson-detail");
    $("#lesson-status").addEventListener("change", () => this.load());
  }

  async load() {
    const status = $("#lesson-status").value;
    try {
      const body = await getJSON(`/lessons?limit=200${status ? `&status=${encodeURIComponent(status)}` : ""}`);
      $("#lesson-count").textContent = `${body.total} lessons`;
      this.list.replaceChildren(...body.lessons.map((lesson) => this.item(lesson)));
      if (!body.lessons.length) this.list.append(el("li", { class: "empty-note", text: "No lessons yet: they are learned from observed runs (agentlake lessons learn, or a scenario run)." }));
    } catch (error) {
      this.list.replaceChildren(el("li", { class: "empty-note", text: `lessons unavailable: ${error.message}` }));
    }
  }

  item(lesson) {
    return el("li", { dataset: { lessonId: lesson.id }, onclick: (event) => this.show(lesson.id, event.currentTarget) },
      el("span", { class: `badge ${lesson.status}`, text: lesson.status }),
      el("b", { text: lesson.id }), ` · ${(lesson.confidence * 100).toFixed(0)}% · v${lesson.version}`,
      // As the agents' prompts show it (Lesson.text): a trigger is already worded ("When
      // tool.x times out", "Doing a fill task"), so nothing is prefixed to it.
      el("div", { text: `${lesson.trigger}: ${lesson.action}` }));
  }

  async show(id, row) {
    for (const node of this.list.querySelectorAll("li.sel")) node.classList.remove("sel");
    if (row) row.classList.add("sel");
    try {
      const body = await getJSON(`/lessons/${encodeURIComponent(id)}`);
      const events = body.history.map((event) => el("li", {},
        el("b", { text: `v${event.version} ${event.kind}` }), ` ${new Date(event.at).toLocaleString([], { hour12: false })} by ${event.actor}`,
        event.reason ? el("div", { class: "muted", text: event.reason }) : null));
      this.detail.replaceChildren(el("h3", { text: `${id} history` }), el("ol", {}, events));
    } catch (error) {
      this.detail.replaceChildren(el("div", { class: "empty-note", text: error.message }));
    }
  }
}
