// Signing in. When the gateway has API keys, the page exchanges one for a session cookie
// (POST /api/session): HttpOnly, so no script here ever reads it, and the browser sends it with
// every request, EventSource and WebSocket, which cannot carry a key header themselves.
// The key is typed once, sent once, and not kept by the page.
import { $, getJSON } from "./dom.js";

let asking = null; // one dialog for every caller that finds itself signed out

// The current session ({auth, scope, key_id, via}), or null when the gateway wants a key.
export async function currentSession() {
  try {
    return await getJSON("/api/session");
  } catch (error) {
    if (error.status === 401) return null;
    throw error;
  }
}

// Resolves with a session once the page may read the gateway, asking for a key when needed.
export async function ensureSession() {
  return (await currentSession()) || askForKey();
}

export function askForKey(message = "") {
  if (asking) return asking;
  const dialog = $("#signin");
  const form = $("#signin-form");
  const input = $("#signin-key");
  const error = $("#signin-error");
  error.textContent = message;
  asking = new Promise((resolve) => {
    form.onsubmit = async (event) => {
      event.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      try {
        const session = await getJSON("/api/session", {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json" },
          body: JSON.stringify({ key }),
        });
        input.value = "";
        error.textContent = "";
        dialog.close();
        asking = null;
        resolve(session);
      } catch (failure) {
        error.textContent = failure.message;
        input.select();
      }
    };
  });
  // The page is useless signed out: Escape does not dismiss the dialog.
  dialog.oncancel = (event) => event.preventDefault();
  if (!dialog.open) dialog.showModal();
  input.focus();
  return asking;
}

export async function signOut() {
  await fetch("/api/session", { method: "DELETE" });
  location.reload();
}
