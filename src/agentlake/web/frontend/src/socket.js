// The WebSocket to the graph runtime, reconnecting with the same session id.
const SESSION_KEY = "agentlake.session";

export class RuntimeSocket {
  constructor(onEvent, onState) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.ws = null;
    this.retry = 500;
    this.pending = [];
    this.beforeReconnect = null; // an async check (e.g. the session) awaited before each retry
  }

  connect() {
    const session = sessionStorage.getItem(SESSION_KEY);
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const url = `${scheme}://${location.host}/ws${session ? `?session=${encodeURIComponent(session)}` : ""}`;
    this.onState("connecting");
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 500;
      this.onState("open");
      for (const event of this.pending.splice(0)) ws.send(JSON.stringify(event));
    };
    ws.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.type === "hello") sessionStorage.setItem(SESSION_KEY, event.session);
      this.onEvent(event);
    };
    ws.onclose = () => {
      this.onState("closed");
      setTimeout(async () => {
        if (this.beforeReconnect) await this.beforeReconnect();
        this.connect();
      }, this.retry);
      this.retry = Math.min(this.retry * 2, 8000);
    };
  }

  send(event) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(event));
    else this.pending.push(event);
  }
}
