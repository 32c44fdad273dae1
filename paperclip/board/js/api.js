// The public API, with the caller's credential (an API key typed in, or without login the
// operator's HttpOnly cookie that the sign-in URL set): nothing here that curl could not do.

const KEY_STORAGE = "paperclip.apiKey";

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
    this.details = body && body.details;
    this.body = body || {};
  }
}

export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE);
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export function authHeaders() {
  const key = apiKey();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

export async function api(method, path, body) {
  const headers = { Accept: "application/json", ...authHeaders() };
  // Same-origin credentials: without login, the operator's sign-in cookie rides along.
  const init = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`/api${path}`, init);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body = {}) => api("POST", path, body);
export const patch = (path, body) => api("PATCH", path, body);

/** Keys for a text a person sends: the same text sent again after a failure (its answer
 * lost) keeps its key, so the server finds the first one instead of writing a second. */
export function keyFor(previous, body) {
  if (previous && previous.body === body) return previous;
  return { body, key: globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(16).slice(2)}` };
}

/** Every item of a paged list (bounded: at most `max` items). */
export async function all(path, max = 1000) {
  const items = [];
  let cursor = null;
  const sep = path.includes("?") ? "&" : "?";
  do {
    const page = await get(`${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && items.length < max);
  return items;
}

export const q = (params) => {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) search.set(k, v);
  const s = search.toString();
  return s ? `?${s}` : "";
};
