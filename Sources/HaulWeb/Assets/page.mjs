// The page's shared state and its drawing loop: the model of the tasks, what needs drawing again, and a frame
// that draws it (at most once per animation frame). Also the toast every part reports with.

import { LoggedOut } from './api.mjs';
import { createModel } from './model.mjs';

/** The speed graph shows the last 5 minutes, one sample a second. */
export const GRAPH_SECONDS = 300;

/** What the page knows: the sessions, the one shown and its settings, its tasks, the stream, the speed history. */
export const app = {
  sessions: [],
  session: '',
  version: '',
  configuration: {},       // session.configuration of the session shown
  model: createModel(),    // the tasks (model.mjs)
  source: null,            // the event stream (api.KeyedEventStream)
  loadGeneration: 0,       // bumps on session switch and reset: stale pages are dropped
  loaded: false,
  history: new Float64Array(GRAPH_SECONDS),
  historyHead: 0,
  loggedOut: false,
  eventCount: 0,
  rowHeight: 52,           // px: the list's --row-height (app.css; taller where rows are cards)
  // What the next frame draws.
  dirty: { view: true, rows: true, status: true, detail: true, segments: false },
};

export const $ = (id) => document.getElementById(id);

/** A new element of `tag` with `className`. */
export function element(tag, className) {
  const node = document.createElement(tag);
  node.className = className;
  return node;
}

let drawFrame = () => {};
let frameRequested = false;

/** What a frame does (app.mjs). */
export function setFrame(draw) {
  drawFrame = draw;
}

/** Asks for a frame that draws what is dirty. */
export function schedule() {
  if (frameRequested || app.loggedOut) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    if (!app.loggedOut) drawFrame();
  });
}

let toastTimer = 0;

/** Shows a message for a few seconds (longer for an error). */
export function toast(message, isError) {
  const el = $('toast');
  el.textContent = message;
  el.classList.toggle('error', !!isError);
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, isError ? 8000 : 3000);
}

/** Shows what failed and the server's message (nothing when logged out: that screen says it). */
export function reportError(what, err) {
  if (err instanceof LoggedOut) return;
  toast(what + ': ' + (err && err.message ? err.message : String(err)), true);
}
