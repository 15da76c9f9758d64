// Haul's dashboard: plain JavaScript modules, no framework, no build step. Strict-CSP safe: no inline script, no
// eval, the DOM is built with createElement/textContent (never innerHTML with data). Live updates come only from
// the server-sent event stream; what they change is drawn at most once per animation frame.
//
// This module starts the page and ties its parts together: the session shown, loading its tasks in pages, the
// event stream, the actions on selected tasks and the drawing frame. The decisions are in the pure modules
// (model.mjs, format.mjs, geometry.mjs, addForm.mjs); docs/web.md lists them all.

import * as api from './api.mjs';
import { drawGraph, drawSegments } from './charts.mjs';
import { closeDetail, detailIsOpen, openDetail, renderDetail, wireDetail } from './detail.mjs';
import { openAddDialog, wireAddDialog, wireSessionDialog, wireSessionSettings } from './dialogs.mjs';
import { formatRateInput, formatSpeed, taskName } from './format.mjs';
import {
  acceptSegmentMap, addListed, applyEvent, clearTasks, forgetTasks, priorityGroups, selectedIds, setFilter, setFocus,
  totalSpeed,
} from './model.mjs';
import { $, GRAPH_SECONDS, app, reportError, schedule, setFrame } from './page.mjs';
import { measureRowHeight, renderRows, renderStatus, renderView, shownRowCount, wireTaskList } from './taskList.mjs';

performance.mark('haul-start');

const FIRST_PAGE_LIMIT = 200;   // tasks.list page that draws the first screen
const PAGE_LIMIT = 2000;        // tasks.list page size while loading in the background
const ACT_CHUNK = 5000;         // ids per call of an action on the selection

let interactiveMarked = false;

// ------------------------------------------------------------------ effects and the frame

/** Marks what a change of the model asks to draw again, for the next frame. */
function mark(out) {
  const dirty = app.dirty;
  if (out.view) dirty.view = true;
  if (out.rows) dirty.rows = true;
  if (out.status) dirty.status = true;
  if (out.detail) dirty.detail = true;
  if (out.segments) dirty.segments = true;
}

/** Does what a change of the model asks: draws it in the next frame, reads a segment map, reloads the tasks. */
function apply(out) {
  mark(out);
  if (out.detail && !app.model.focused) closeDetail();
  if (out.loadSegments) loadSegments(out.loadSegments);
  if (out.reload) reloadTasks();
  schedule();
}

function frame() {
  const dirty = app.dirty;
  if (dirty.view) { dirty.view = false; renderView(); }
  if (dirty.rows) { dirty.rows = false; renderRows(); }
  if (dirty.status) { dirty.status = false; renderStatus(); }
  if (dirty.detail) { dirty.detail = false; renderDetail(); }
  if (dirty.segments) { dirty.segments = false; drawSegments(); }
  if (!interactiveMarked && shownRowCount() > 0) {
    interactiveMarked = true;
    performance.mark('haul-interactive');
    document.body.dataset.interactive = 'true';
  }
}

function focus(id) {
  apply(setFocus(app.model, id));
}

async function loadSegments(id) {
  try {
    const map = await api.rpc('tasks.segments', { session: app.session, id: id });
    if (acceptSegmentMap(app.model, id, map)) { app.dirty.segments = true; schedule(); }
  } catch (err) {
    if (app.model.focused === id) reportError('Could not read the segment map', err);
  }
}

// ------------------------------------------------------------------ logged out

function showLoggedOut() {
  if (app.loggedOut) return;
  app.loggedOut = true;
  if (app.source) { app.source.close(); app.source = null; }
  $('app').remove();
  for (const d of document.querySelectorAll('dialog')) d.remove();
  $('loading').hidden = true;
  $('login-required').hidden = false;
}

async function checkLogin() {
  try {
    if ((await api.me()) === null) showLoggedOut();
  } catch (e) { /* the daemon is away; the stream shows it */ }
}

// ------------------------------------------------------------------ loading

async function loadTasks() {
  const generation = ++app.loadGeneration;
  app.loaded = false;
  $('task-list').dataset.loaded = 'false';
  $('status-loading').textContent = 'loading tasks…';
  let cursor = null;
  let first = true;
  try {
    for (;;) {
      // A small first page draws the first screen soon; the rest comes in pages of PAGE_LIMIT behind it.
      const params = { session: app.session, limit: first ? FIRST_PAGE_LIMIT : PAGE_LIMIT };
      if (cursor) params.cursor = cursor;
      const page = await api.rpc('tasks.list', params);
      if (generation !== app.loadGeneration) return;
      // An event may already have brought a newer copy of a task: that one is kept.
      const out = addListed(app.model, page.tasks);
      // The first page is drawn at once; the others with the next frame something else asks for, or the last.
      if (first) { first = false; apply(out); } else mark(out);
      cursor = page.next;
      if (!cursor) break;
      $('status-loading').textContent = 'loading tasks… ' + app.model.tasks.size;
      await new Promise((resolve) => setTimeout(resolve, 0)); // let the page draw and answer between pages
    }
    app.loaded = true;
    $('status-loading').textContent = '';
    $('task-list').dataset.loaded = 'true';
    if (!performance.getEntriesByName('haul-loaded').length) performance.mark('haul-loaded');
    app.dirty.view = true;
    schedule();
  } catch (err) {
    if (generation !== app.loadGeneration) return;
    $('status-loading').textContent = '';
    if (api.isNoSuchSession(err)) {
      // A session nobody has added to yet: empty until its first task (the stream tells).
      app.loaded = true;
      $('task-list').dataset.loaded = 'true';
      app.dirty.view = true;
      schedule();
    } else {
      reportError('Could not list the tasks', err);
    }
  }
}

function reloadTasks() {
  const focused = app.model.focused;
  apply(clearTasks(app.model));
  loadTasks().then(() => { if (focused && app.model.tasks.has(focused)) focus(focused); });
}

function openStream() {
  if (app.source) app.source.close();
  const live = $('live');
  live.dataset.live = 'connecting';
  live.textContent = 'connecting';
  const source = api.events(app.session);
  app.source = source;
  source.onopen = () => {
    if (app.source !== source) return;
    live.dataset.live = 'live';
    live.textContent = 'live';
  };
  source.onerror = () => {
    if (app.source !== source) return;
    // The stream reconnects by itself with Last-Event-ID; it gives up only when the server refuses it.
    if (source.readyState === api.KeyedEventStream.CLOSED) {
      live.dataset.live = 'offline';
      live.textContent = 'offline';
      checkLogin();
    } else {
      live.dataset.live = 'connecting';
      live.textContent = 'reconnecting';
    }
  };
  source.onmessage = (message) => {
    if (app.source !== source) return;
    let event;
    try { event = JSON.parse(message.data); } catch (e) { return; }
    if (event && typeof event.type === 'string') { app.eventCount += 1; apply(applyEvent(app.model, event)); }
  };
}

// ------------------------------------------------------------------ sessions

async function loadConfiguration() {
  try {
    const config = await api.rpc('session.configuration', { session: app.session });
    app.configuration = config || {};
    const concurrency = $('session-concurrency');
    concurrency.value = typeof app.configuration.maxConcurrentDownloads === 'number' ? app.configuration.maxConcurrentDownloads : '';
    $('session-rate').value = formatRateInput(app.configuration.rateLimit);
    $('add-directory').placeholder = app.configuration.defaultDirectory || "session's default";
  } catch (err) {
    app.configuration = {};
    if (!api.isNoSuchSession(err)) reportError('Could not read the session settings', err);
  }
}

function fillSessions() {
  const select = $('session-select');
  select.replaceChildren();
  const names = app.sessions.slice();
  if (!names.includes(app.session)) names.push(app.session);
  names.sort();
  for (const name of names) {
    const option = document.createElement('option');
    option.value = name;
    option.textContent = name;
    option.selected = name === app.session;
    select.appendChild(option);
  }
}

async function switchSession(name) {
  app.session = name;
  try { localStorage.setItem('haul.session', name); } catch (e) { /* private mode */ }
  fillSessions();
  focus(null);
  apply(clearTasks(app.model));
  app.history.fill(0);
  openStream();
  loadConfiguration();
  await loadTasks();
}

/** A session the daemon now has (opened, or made by a first add): listed, with its settings read. */
function knowSession(name) {
  if (app.sessions.includes(name)) return false;
  app.sessions.push(name);
  return true;
}

// ------------------------------------------------------------------ actions

/** Calls `method` for `ids` (in chunks); removed tasks leave the list. */
async function act(ids, method, extra, label) {
  if (!ids.length) return;
  try {
    for (let i = 0; i < ids.length; i += ACT_CHUNK) {
      await api.rpc(method, Object.assign({ session: app.session, ids: ids.slice(i, i + ACT_CHUNK) }, extra || {}));
    }
    if (method === 'tasks.remove') apply(forgetTasks(app.model, ids));
  } catch (err) {
    reportError('Could not ' + label, err);
  }
}

async function changePriority(delta) {
  try {
    for (const [priority, ids] of priorityGroups(app.model, delta)) {
      await api.rpc('tasks.setPriority', { session: app.session, ids: ids, priority: priority });
      for (const id of ids) { const t = app.model.tasks.get(id); if (t) t.priority = priority; }
    }
    app.dirty.detail = true;
    schedule();
  } catch (err) {
    reportError('Could not change the priority', err);
  }
}

function confirmDelete() {
  const ids = selectedIds(app.model);
  const one = ids.length === 1 ? app.model.tasks.get(ids[0]) : null;
  $('confirm-text').textContent = one
    ? 'Remove "' + taskName(one) + '" and delete its file' + (one.path ? ' ' + one.path : '') + '?'
    : 'Remove ' + ids.length + ' tasks and delete their files?';
  $('confirm-dialog').showModal();
}

/** The Settings and Actions buttons (phones): each shows or hides what it folds. */
function wireMenu(buttonId, panelId) {
  const button = $(buttonId);
  const panel = $(panelId);
  button.addEventListener('click', () => {
    const open = button.getAttribute('aria-expanded') !== 'true';
    button.setAttribute('aria-expanded', String(open));
    panel.classList.toggle('open', open);
  });
}

// ------------------------------------------------------------------ speed graph

function sampleSpeed() {
  if (app.loggedOut) return;
  const total = totalSpeed(app.model);
  app.history[app.historyHead] = total;
  app.historyHead = (app.historyHead + 1) % GRAPH_SECONDS;
  $('total-speed').textContent = total > 0 ? formatSpeed(total) : '0 B/s';
  drawGraph();
}

// ------------------------------------------------------------------ wiring

function wire() {
  const selected = () => selectedIds(app.model);
  wireTaskList(apply, openDetail);
  wireDetail((method, extra, label) => act(app.model.focused ? [app.model.focused] : [], method, extra, label));
  window.addEventListener('resize', () => { measureRowHeight(); app.dirty.rows = true; schedule(); drawGraph(); drawSegments(); });
  wireMenu('settings-toggle', 'session-controls');
  wireMenu('actions-toggle', 'task-actions');

  $('action-pause').addEventListener('click', () => act(selected(), 'tasks.pause', null, 'pause'));
  $('action-resume').addEventListener('click', () => act(selected(), 'tasks.resume', null, 'resume'));
  $('action-remove').addEventListener('click', () => act(selected(), 'tasks.remove', { deleteFile: false }, 'remove'));
  $('action-delete').addEventListener('click', confirmDelete);
  $('action-priority-up').addEventListener('click', () => changePriority(1));
  $('action-priority-down').addEventListener('click', () => changePriority(-1));
  $('confirm-cancel').addEventListener('click', () => $('confirm-dialog').close());
  $('confirm-ok').addEventListener('click', () => {
    $('confirm-dialog').close();
    act(selected(), 'tasks.remove', { deleteFile: true }, 'remove and delete');
  });

  let searchTimer = 0;
  const refilter = () => {
    setFilter(app.model, $('filter-state').value, $('search').value);
    app.dirty.view = true;
    schedule();
  };
  $('search').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(refilter, 120);
  });
  $('filter-state').addEventListener('change', refilter);

  $('session-select').addEventListener('change', () => switchSession($('session-select').value));
  wireSessionDialog((name) => { knowSession(name); switchSession(name); });
  wireSessionSettings();
  wireAddDialog(apply, () => {
    if (knowSession(app.session)) { fillSessions(); loadConfiguration(); }
  });

  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && detailIsOpen() && !document.querySelector('dialog[open]')) {
      closeDetail();
      return;
    }
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement
      || event.target instanceof HTMLSelectElement;
    if (!typing && event.key === 'n' && !event.ctrlKey && !event.metaKey && !event.altKey && !document.querySelector('dialog[open]')) {
      event.preventDefault();
      openAddDialog(null);
    }
  });

  setInterval(sampleSpeed, 1000);
}

async function start() {
  api.adoptKey();
  api.configure({ onLoggedOut: showLoggedOut });
  let me;
  try {
    me = await api.me();
    if (me === null) { showLoggedOut(); return; }
  } catch (err) {
    $('loading').textContent = 'Could not reach the dashboard: ' + err.message + '. Is `haul daemon` still running?';
    return;
  }
  api.configure({ csrf: me.csrf });
  app.sessions = Array.isArray(me.sessions) ? me.sessions : [];
  app.version = me.version || '';
  $('version').textContent = app.version ? 'haul ' + app.version : '';
  let session = '';
  try { session = localStorage.getItem('haul.session') || ''; } catch (e) { session = ''; }
  if (!app.sessions.includes(session)) session = app.sessions.includes('default') || !app.sessions.length ? 'default' : app.sessions[0];
  $('loading').hidden = true;
  $('app').hidden = false;
  setFrame(frame);
  wire();
  measureRowHeight();
  drawGraph();
  await switchSession(session);
}

// Test and benchmark hooks (no secrets): counts and timings only.
window.haulDashboard = {
  taskCount: () => app.model.tasks.size,
  loaded: () => app.loaded,
  eventCount: () => app.eventCount,
  renderedRows: () => document.querySelectorAll('#task-list-inner .row:not([hidden])').length,
};

// A module runs once the document is parsed.
start();
