// The server: REST calls with the bearer token, screenshots as blob URLs, and the one
// WebSocket (token as a subprotocol, never in a URL), reconnecting and resuming by seq.

const KEY = "droidpilot.token";

export const token = {
  get: () => sessionStorage.getItem(KEY) || "",
  set: (t) => sessionStorage.setItem(KEY, t.trim()),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An error in the server's one shape: `code`, `message`, `hint`. */
export class ApiError extends Error {
  constructor(status, code, message, hint) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint;
  }
  toString() {
    return this.hint ? `${this.message} — ${this.hint}` : this.message;
  }
}

function headers(json) {
  const h = {};
  const t = token.get();
  if (t) h.Authorization = `Bearer ${t}`;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

/** Set once the server refused a request for want of a token: no socket without one. */
let tokenNeeded = false;

/**
 * Calls the API; resolves to the JSON body (or the Response with `raw`). `body` is sent
 * as JSON; `text` as is, with the content type `type` (a Maestro flow's YAML).
 */
export async function api(path, { method = "GET", body, text, type, raw = false } = {}) {
  const json = body !== undefined;
  const hs = headers(json);
  if (text !== undefined) hs["Content-Type"] = type || "text/plain";
  const r = await fetch(path, {
    method,
    headers: hs,
    body: json ? JSON.stringify(body) : text,
    cache: "no-store",
  });
  if (!r.ok) {
    let e = {};
    try {
      e = (await r.json()).error || {};
    } catch {
      /* not the error shape */
    }
    if (r.status === 401) {
      tokenNeeded = true;
      window.dispatchEvent(new Event("droidpilot:unauthorized"));
    }
    throw new ApiError(r.status, e.code || `http_${r.status}`, e.message || r.statusText, e.hint || "");
  }
  if (raw) return r;
  return r.status === 204 ? null : r.json();
}

/** Fetches an image with the token (an <img> cannot send headers) as a blob URL. */
export async function blobUrl(path) {
  const r = await api(path, { raw: true });
  return URL.createObjectURL(await r.blob());
}

/** Downloads a file the API serves, under `name`. */
export async function download(path, name) {
  const url = await blobUrl(path);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A Sec-WebSocket-Protocol entry must be an HTTP token (RFC 7230). */
const TOKEN_CHARS = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The one WebSocket (`/v1/ws`). Subscriptions are remembered and re-sent on reconnect
 * with the last seq seen per stream, so nothing is missed or repeated.
 */
export class Live {
  constructor(onState) {
    this.handlers = new Set();
    this.subs = [];
    this.since = {};
    this.pending = [];
    this.retry = 0;
    this.closed = false;
    this.onState = onState || (() => {});
    this.connect();
  }

  connect() {
    const t = token.get();
    if (!t && tokenNeeded) {
      // The sign-in form is showing; a socket without the token would only be refused.
      this.onState("offline");
      return;
    }
    if (t && !TOKEN_CHARS.test(t)) {
      this.onState("token cannot be used for live updates");
      return;
    }
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const protocols = t ? [`droidpilot.bearer.${t}`, "droidpilot"] : [];
    const ws = new WebSocket(`${scheme}//${location.host}/v1/ws`, protocols);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 0;
      this.onState("live");
      for (const s of this.subs) ws.send(JSON.stringify({ ...s, since: this.since }));
      for (const m of this.pending.splice(0)) ws.send(m);
    };
    ws.onmessage = (m) => {
      let msg;
      try {
        msg = JSON.parse(m.data);
      } catch {
        return;
      }
      if (msg.type === "event") {
        const ev = msg.event;
        if ((this.since[ev.stream] || 0) >= ev.seq) return; // already seen
        this.since[ev.stream] = ev.seq;
      }
      for (const h of [...this.handlers]) h(msg);
    };
    ws.onclose = () => {
      if (this.closed) return;
      this.onState("reconnecting");
      const delay = Math.min(5000, 300 * 2 ** this.retry++);
      this.timer = setTimeout(() => this.connect(), delay);
    };
  }

  send(msg) {
    const text = JSON.stringify(msg);
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
    else this.pending.push(text);
  }

  /** Subscribes (kept for reconnects); `since` resumes after the seqs already seen. */
  subscribe(sub) {
    this.subs.push(sub);
    this.send({ type: "subscribe", ...sub, since: this.since });
  }

  /** Adds a message handler; returns its remover. */
  on(handler) {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close();
  }
}
