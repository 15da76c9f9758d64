// The dashboard's server: `/api/me`, `/api/rpc` (one daemon call, with the CSRF token) and `/api/events` (the
// session's Server-Sent Events). No DOM: a 401 is passed to the page's `onLoggedOut`.

/** Thrown by a call the server refused for want of a login (the page has shown it already). */
export class LoggedOut extends Error {}

const server = {
  csrf: '',
  onLoggedOut: () => {},
};

/** Sets the CSRF token of `/api/me` and what a 401 does. */
export function configure(options) {
  if (options.csrf !== undefined) server.csrf = options.csrf;
  if (options.onLoggedOut) server.onLoggedOut = options.onLoggedOut;
}

/** `/api/me`: `{csrf, sessions, version}`; null when not logged in (401); throws when the server cannot answer. */
export async function me() {
  const response = await fetch('/api/me', { credentials: 'same-origin', cache: 'no-store' });
  if (response.status === 401) return null;
  if (!response.ok) throw new Error('the server answered ' + response.status);
  return response.json();
}

/**
 * Calls one daemon method through the bridge; resolves with its result, rejects with an Error carrying the
 * daemon's message (and its `data`, such as `{reason: "noSuchSession"}`).
 */
export async function rpc(method, params) {
  const response = await fetch('/api/rpc', {
    method: 'POST',
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': server.csrf },
    body: JSON.stringify({ method: method, params: params || {} }),
  });
  if (response.status === 401) { server.onLoggedOut(); throw new LoggedOut('not logged in'); }
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) {
    const message = body && (typeof body.error === 'string' ? body.error : body.error && body.error.message);
    throw new Error(message || ('the server answered ' + response.status));
  }
  if (body && body.error) {
    const err = new Error(body.error.message || 'the daemon refused the request');
    err.data = body.error.data;
    throw err;
  }
  return body ? body.result : null;
}

/** Whether an error says the session does not exist (yet). */
export function isNoSuchSession(err) {
  return !!(err && err.data && err.data.reason === 'noSuchSession');
}

/** The event stream of `session` (EventSource reconnects by itself with `Last-Event-ID`). */
export function events(session) {
  return new EventSource('/api/events?session=' + encodeURIComponent(session));
}
