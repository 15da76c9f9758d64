// The dashboard's server: `/api/me`, `/api/rpc` (one daemon call, with the CSRF token) and `/api/events` (the
// session's Server-Sent Events). No DOM: a 401 is passed to the page's `onLoggedOut`.
//
// Every call carries the session's key in `X-Haul-Key`: the cookie alone opens nothing, since a browser sends it to
// every port of 127.0.0.1. The login redirect hands the key over in the address's fragment (`/#key=…`, never sent to
// a server); `adoptKey` moves it into this origin's sessionStorage (scheme, host and port: no other port's page reads
// it) and out of the address bar. A reload keeps it; another tab needs a login link of its own.

import { EventStreamParser, keyFromHash } from './eventStream.mjs';

/** Thrown by a call the server refused for want of a login (the page has shown it already). */
export class LoggedOut extends Error {}

const server = {
  csrf: '',
  key: '',  // when sessionStorage cannot be used (storage disabled): this page's life only
  onLoggedOut: () => {},
};

const KEY_ITEM = 'haul.key';

/**
 * Takes the login's key out of the address (`/#key=…`) into sessionStorage, and the fragment out of the address
 * bar and the history entry. Called once, before the first request.
 */
export function adoptKey() {
  const key = keyFromHash(location.hash);
  if (key === null) return;
  history.replaceState(null, '', location.pathname + location.search);
  server.key = key;
  try { sessionStorage.setItem(KEY_ITEM, key); } catch (e) { /* kept in server.key */ }
}

function currentKey() {
  let stored = null;
  try { stored = sessionStorage.getItem(KEY_ITEM); } catch (e) { stored = null; }
  return stored || server.key;
}

/** The headers of every call: `extra` and the session's key. */
function withKey(extra) {
  const headers = Object.assign({}, extra);
  const key = currentKey();
  if (key) headers['X-Haul-Key'] = key;
  return headers;
}

/** Sets the CSRF token of `/api/me` and what a 401 does. */
export function configure(options) {
  if (options.csrf !== undefined) server.csrf = options.csrf;
  if (options.onLoggedOut) server.onLoggedOut = options.onLoggedOut;
}

/** `/api/me`: `{csrf, sessions, version}`; null when not logged in (401); throws when the server cannot answer. */
export async function me() {
  if (!currentKey()) return null; // no key, no login: the server would refuse the cookie alone
  const response = await fetch('/api/me', { credentials: 'same-origin', cache: 'no-store', headers: withKey({}) });
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
    headers: withKey({ 'Content-Type': 'application/json', 'X-CSRF-Token': server.csrf }),
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

/** The event stream of `session`: an EventSource-like reader that sends the key (see `KeyedEventStream`). */
export function events(session) {
  return new KeyedEventStream('/api/events?session=' + encodeURIComponent(session));
}

/**
 * What EventSource does — `onopen`, `onmessage({data, lastEventId})`, `onerror`, `readyState`, `close()`,
 * reconnecting with `Last-Event-ID` after a dropped stream (after `retry:` ms, 3 s by default) and giving up
 * (CLOSED) when the server refuses it — over fetch(), which can send `X-Haul-Key`.
 */
export class KeyedEventStream {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 2;

  constructor(url) {
    this.url = url;
    this.readyState = KeyedEventStream.CONNECTING;
    this.lastEventId = '';
    this.retry = 3000;
    this.onopen = null;
    this.onmessage = null;
    this.onerror = null;
    this.controller = null;
    this.timer = null;
    this.connect();
  }

  close() {
    this.readyState = KeyedEventStream.CLOSED;
    clearTimeout(this.timer);
    if (this.controller) this.controller.abort();
    this.controller = null;
  }

  fire(handler, event) {
    if (typeof this[handler] === 'function') this[handler](event || {});
  }

  async connect() {
    const controller = new AbortController();
    this.controller = controller;
    const extra = { Accept: 'text/event-stream' };
    if (this.lastEventId) extra['Last-Event-ID'] = this.lastEventId;
    let response;
    try {
      response = await fetch(this.url, { headers: withKey(extra), credentials: 'same-origin', cache: 'no-store', signal: controller.signal });
    } catch (e) {
      this.dropped(controller);
      return;
    }
    if (this.controller !== controller) return;
    const type = response.headers.get('Content-Type') || '';
    if (response.status !== 200 || !type.startsWith('text/event-stream') || !response.body) {
      // Refused (401, 403, 429…): as EventSource, no reconnection.
      this.readyState = KeyedEventStream.CLOSED;
      controller.abort();
      this.controller = null;
      this.fire('onerror');
      return;
    }
    this.readyState = KeyedEventStream.OPEN;
    this.fire('onopen');
    const parser = new EventStreamParser();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      // Each turn reads what arrived; ends when the server closes the stream or it is closed here (aborted).
      for (;;) {
        const { value, done } = await reader.read();
        if (done || this.controller !== controller) break;
        for (const message of parser.push(value)) {
          if (this.controller !== controller) break;
          if (message.retry !== undefined) { this.retry = message.retry; continue; }
          this.lastEventId = message.lastEventId;
          if (message.data !== undefined && message.type === 'message') {
            this.fire('onmessage', { data: message.data, lastEventId: message.lastEventId });
          }
        }
      }
    } catch (e) {
      // dropped: reconnect below
    }
    this.dropped(controller);
  }

  dropped(controller) {
    if (this.controller !== controller || this.readyState === KeyedEventStream.CLOSED) return;
    this.readyState = KeyedEventStream.CONNECTING;
    this.fire('onerror');
    this.timer = setTimeout(() => { if (this.readyState !== KeyedEventStream.CLOSED) this.connect(); }, this.retry);
  }
}
