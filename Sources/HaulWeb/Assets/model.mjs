// The page's model of a session's tasks, and the reducer that applies the daemon's events to it. Pure: no DOM, no
// network, no clock (Tests/web/model.test.mjs).
//
// The model is updated in place — a session may hold 100,000 tasks and its stream some 200 events a second, so a
// copy per event would cost more than everything else the page does — and every function that changes it returns
// what the page must do about it (an `Effects`): which parts to draw again and what to ask the daemon.

import { taskName } from './format.mjs';

/** The states of a task, in the order the status bar counts them. */
export const STATES = ['waiting', 'running', 'paused', 'finished', 'failed', 'cancelled'];

/** An empty model. */
export function createModel() {
  return {
    tasks: new Map(),       // id -> task (the protocol's Task object, kept up to date by events)
    order: [],              // ids in the order added
    speeds: new Map(),      // id -> bytesPerSecond of running tasks
    view: [],               // ids shown (after filter and search), in order
    viewIndex: new Map(),   // id -> index in view
    filter: '',             // '' (all), 'active' (running or waiting) or one state
    search: '',             // lower-case text a shown task's name or URL contains
    pruneSelection: false,  // the next view drops what it hides from the selection
    selected: new Set(),
    anchor: null,           // id of the last plain or ctrl click, for shift-click ranges
    focused: null,          // id shown in the detail panel
    segments: null,         // {id, total, done, active} of the focused task
    segmentsFromStream: false,
  };
}

/**
 * What the page does after a change: draw the list again (`view`: filter and order too; `rows`: the rows'
 * contents), the status bar, the detail panel or the segment map; read a task's segment map (`loadSegments`, its
 * id); reload every task (`reload`).
 */
export function effects() {
  return { view: false, rows: false, status: false, detail: false, segments: false, loadSegments: null, reload: false };
}

function trackSpeed(model, task) {
  if (task.state === 'running' && task.bytesPerSecond > 0) model.speeds.set(task.id, task.bytesPerSecond);
  else model.speeds.delete(task.id);
}

/** Adds a task or brings it up to date with a newer copy (a `tasks.list` page, an `added` or `finished` event). */
export function upsertTask(model, task, out = effects()) {
  const existing = model.tasks.get(task.id);
  if (existing) {
    Object.assign(existing, task);
    if (task.secondsRemaining === undefined) delete existing.secondsRemaining;
  } else {
    model.tasks.set(task.id, Object.assign({}, task));
    model.order.push(task.id);
  }
  trackSpeed(model, model.tasks.get(task.id));
  out.view = true;
  if (task.id === model.focused) out.detail = true;
  return out;
}

/**
 * Adds the tasks of a `tasks.list` page or a `tasks.add` answer that the model does not hold yet: the stream may
 * already have brought a newer copy of one, which is kept.
 */
export function addListed(model, tasks, out = effects()) {
  for (const task of tasks || []) if (!model.tasks.has(task.id)) upsertTask(model, task, out);
  out.view = true;
  return out;
}

/** Forgets removed tasks: their selection, speed and focus go with them. */
export function forgetTasks(model, ids, out = effects()) {
  const gone = new Set(ids);
  for (const id of gone) {
    model.tasks.delete(id);
    model.selected.delete(id);
    model.speeds.delete(id);
  }
  model.order = model.order.filter((id) => !gone.has(id));
  if (model.focused && gone.has(model.focused)) setFocus(model, null, out);
  out.view = true;
  return out;
}

/** Forgets every task (another session, or a reload). */
export function clearTasks(model, out = effects()) {
  model.tasks.clear();
  model.order = [];
  model.selected.clear();
  model.speeds.clear();
  model.anchor = null;
  out.view = true;
  return out;
}

/** Shows `id` (or nothing) in the detail panel; its segment map is read anew. */
export function setFocus(model, id, out = effects()) {
  if (model.focused === id) return out;
  model.focused = id;
  model.segments = null;
  model.segmentsFromStream = false;
  out.segments = true;
  out.detail = true;
  out.rows = true;
  if (id) out.loadSegments = id;
  return out;
}

/**
 * Takes the answer of `tasks.segments` for `id`: kept when `id` is still focused and no stream reading came
 * after the question (a stream reading is newer). Says whether it was kept.
 */
export function acceptSegmentMap(model, id, map) {
  if (model.focused !== id || !map) return false;
  if (model.segmentsFromStream && model.segments && model.segments.id === id) return false;
  model.segments = { id: id, total: map.total, done: map.done || [], active: map.active || [] };
  return true;
}

/** Applies one event of the session's stream (docs/protocol.md, "Events"). */
export function applyEvent(model, event, out = effects()) {
  switch (event.type) {
    case 'added':
      if (event.task) upsertTask(model, event.task, out);
      break;
    case 'stateChanged': {
      const task = model.tasks.get(event.id);
      if (!task) break;
      task.state = event.to;
      if (event.to !== 'running') { task.bytesPerSecond = null; delete task.secondsRemaining; }
      trackSpeed(model, task);
      out.view = true;
      if (event.id === model.focused) {
        out.detail = true;
        if (event.to !== 'running') {
          // Nothing is being fetched any more: the daemon's map says where the bytes stopped.
          model.segmentsFromStream = false;
          out.segments = true;
          out.loadSegments = event.id;
        }
      }
      break;
    }
    case 'progress': {
      const task = model.tasks.get(event.id);
      if (!task) break;
      task.bytes = event.bytes;
      if (event.total !== undefined) task.total = event.total;
      task.bytesPerSecond = event.bytesPerSecond;
      task.secondsRemaining = event.secondsRemaining;
      if (task.note) task.note = null;
      trackSpeed(model, task);
      out.rows = true;
      if (event.id === model.focused) {
        out.detail = true;
        // A single-connection download gets no segments events: its map is one range from 0.
        const map = model.segments;
        if (map && map.id === event.id && !model.segmentsFromStream && event.bytes > 0) {
          map.done = [[0, event.bytes]];
          map.total = task.total;
          const total = typeof task.total === 'number' ? task.total : null;
          map.active = total !== null && total > event.bytes ? [[event.bytes, total]] : [];
          out.segments = true;
        }
      }
      break;
    }
    case 'finished':
    case 'failed':
      if (event.task) {
        upsertTask(model, event.task, out);
        if (event.task.id === model.focused) {
          // Its end: the daemon's map now says where every byte is; no stream reading follows.
          model.segmentsFromStream = false;
          out.loadSegments = event.task.id;
        }
      }
      break;
    case 'segments':
      if (event.id === model.focused) {
        model.segments = { id: event.id, total: event.total, done: event.done || [], active: event.active || [] };
        model.segmentsFromStream = true;
        out.segments = true;
      }
      break;
    case 'removed':
      // Removed by this page, another client or `haul rm`: gone from every view.
      if (model.tasks.has(event.id)) forgetTasks(model, [event.id], out);
      break;
    case 'reset':
      out.reload = true;
      break;
    default:
      break; // allFinished and anything newer: nothing to draw
  }
  return out;
}

// ------------------------------------------------------------------ the view: filter and search

/** Whether a task is shown under `filter` and `search` (lower case, in its name or URL). */
export function matches(task, filter, search) {
  if (filter === 'active') { if (task.state !== 'running' && task.state !== 'waiting') return false; }
  else if (filter && task.state !== filter) return false;
  if (search) {
    if (taskName(task).toLowerCase().indexOf(search) < 0 && String(task.url).toLowerCase().indexOf(search) < 0) return false;
  }
  return true;
}

/** A new filter (`''`, `'active'` or a state) or search text: what it hides is no longer selected. */
export function setFilter(model, filter, search) {
  model.filter = filter;
  model.search = String(search).trim().toLowerCase();
  model.pruneSelection = true;
}

/** Works out the shown ids in order (`view`, `viewIndex`); after a new filter, drops hidden ones from the selection. */
export function rebuildView(model) {
  const view = [];
  const index = new Map();
  for (const id of model.order) {
    const task = model.tasks.get(id);
    if (task && matches(task, model.filter, model.search)) { index.set(id, view.length); view.push(id); }
  }
  model.view = view;
  model.viewIndex = index;
  if (model.pruneSelection) {
    // Actions act on what is shown.
    model.pruneSelection = false;
    for (const id of Array.from(model.selected)) if (!index.has(id)) model.selected.delete(id);
  }
}

/** The status bar: `12 tasks · 3 running · 9 finished · 4 shown`. */
export function statusText(model) {
  const counts = {};
  for (const s of STATES) counts[s] = 0;
  for (const task of model.tasks.values()) counts[task.state] = (counts[task.state] || 0) + 1;
  const parts = [model.tasks.size + ' tasks'];
  for (const s of STATES) if (counts[s]) parts.push(counts[s] + ' ' + s);
  if (model.view.length !== model.tasks.size) parts.push(model.view.length + ' shown');
  return parts.join(' · ');
}

// ------------------------------------------------------------------ selection

/** The selected ids in the order added (the order actions are sent in). */
export function selectedIds(model) {
  return model.order.filter((id) => model.selected.has(id));
}

/** Whether every shown task is selected (`all`), or only some (`some`): the select-all box. */
export function selectionOfView(model) {
  const n = model.selected.size;
  const all = n > 0 && model.view.length > 0 && model.view.every((id) => model.selected.has(id));
  return { all: all, some: !all && n > 0 };
}

/** Selects the shown tasks from `fromId` to `toId`, added to the selection or instead of it; false when either is hidden. */
export function selectRange(model, fromId, toId, additive) {
  const a = model.viewIndex.get(fromId);
  const b = model.viewIndex.get(toId);
  if (a === undefined || b === undefined) return false;
  if (!additive) model.selected.clear();
  for (let i = Math.min(a, b); i <= Math.max(a, b); i++) model.selected.add(model.view[i]);
  return true;
}

/**
 * A click on a task's row: with shift, a range from the anchor; on its checkbox or with ctrl/cmd, one task in or
 * out; else that task alone. The focus follows unless a checkbox was clicked while some task is focused. Says
 * whether the details should open (a plain click).
 */
export function clickTask(model, id, how, out = effects()) {
  const toggles = how.checkbox || how.ctrl;
  if (how.shift && model.anchor && selectRange(model, model.anchor, id, toggles)) {
    // a range from the anchor
  } else if (toggles) {
    if (model.selected.has(id)) model.selected.delete(id); else model.selected.add(id);
    model.anchor = id;
  } else {
    model.selected.clear();
    model.selected.add(id);
    model.anchor = id;
  }
  if (!how.checkbox || !model.focused) setFocus(model, id, out);
  out.rows = true;
  out.status = true;
  return !how.checkbox && !how.shift && !how.ctrl;
}

/** Selects every shown task, or none. */
export function selectAllShown(model, on) {
  if (on) for (const id of model.view) model.selected.add(id);
  else model.selected.clear();
}

/** The arrow keys: the task before or after the focused one, alone selected and focused; its index, or -1. */
export function moveFocus(model, step, out = effects()) {
  if (!model.view.length) return -1;
  let index = model.focused && model.viewIndex.has(model.focused) ? model.viewIndex.get(model.focused) : -1;
  index = step > 0 ? Math.min(model.view.length - 1, index + 1) : Math.max(0, index - 1);
  const id = model.view[index];
  model.selected.clear();
  model.selected.add(id);
  model.anchor = id;
  setFocus(model, id, out);
  out.rows = true;
  out.status = true;
  return index;
}

/** The selected tasks grouped by the priority they get when moved by `delta`: one `tasks.setPriority` per group. */
export function priorityGroups(model, delta) {
  const groups = new Map();
  for (const id of selectedIds(model)) {
    const task = model.tasks.get(id);
    const next = ((task && task.priority) || 0) + delta;
    if (!groups.has(next)) groups.set(next, []);
    groups.get(next).push(id);
  }
  return groups;
}

/** The sum of the speeds of the running tasks, in bytes per second. */
export function totalSpeed(model) {
  let total = 0;
  for (const bps of model.speeds.values()) total += bps;
  return total;
}
