// The REST API as the dashboard calls it: JSON in and out, the user's token on every request.
// The token lives in this tab's session storage only: closing the tab forgets it.

const TOKEN_KEY = "hivemem.token";

/** A refusal or failure of the server, with its own error code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** Send `file` as the raw body of `PUT path` (a document upload). */
export async function upload(path, query, file) {
  return call("PUT", path, { query, body: file, raw: true });
}

/**
 * Call `method path` with `query` parameters (empty ones left out) and a JSON `body` (sent as it
 * is when `raw`); `keepalive` lets the request outlive the page (a forget sent as the tab closes).
 */
export async function call(method, path, { query = {}, body, keepalive = false, raw = false } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, String(value));
  }
  const headers = { Accept: "application/json" };
  if (body !== undefined && !raw) headers["Content-Type"] = "application/json";
  if (token()) headers.Authorization = `Bearer ${token()}`;
  let answer;
  try {
    const payload = body === undefined || raw ? body : JSON.stringify(body);
    answer = await fetch(url, { method, headers, body: payload, keepalive });
  } catch (error) {
    throw new ApiError(0, "unreachable", `the server did not answer: ${error.message}`);
  }
  const text = await answer.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { error: String(answer.status), message: text.slice(0, 300) };
  }
  if (!answer.ok) {
    throw new ApiError(answer.status, data?.error ?? String(answer.status), data?.message ?? answer.statusText);
  }
  return data;
}

export const get = (path, query) => call("GET", path, { query });
export const post = (path, body, query) => call("POST", path, { body, query });
