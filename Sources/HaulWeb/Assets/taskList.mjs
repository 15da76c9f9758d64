// The task list: a virtual list whose few row elements (a pool) are moved and refilled as it scrolls, the status
// bar, and what clicks and keys on the list do to the selection. The DOM is built with createElement and
// textContent, never innerHTML.

import { bytesOf, etaOf, formatDuration, formatSpeed, progressOf, shownUrl, taskName, withoutUrl } from './format.mjs';
import { scrollToShow, visibleRows } from './geometry.mjs';
import { clickTask, effects, moveFocus, rebuildView, selectAllShown, selectionOfView, statusText } from './model.mjs';
import { $, app, element, schedule } from './page.mjs';

const OVERSCAN = 8; // rows drawn above and below the visible ones
const ACTION_BUTTONS = ['action-pause', 'action-resume', 'action-priority-up', 'action-priority-down', 'action-remove', 'action-delete'];

const rowPool = []; // row elements, reused
let rowsShown = 0;

/** How many rows are drawn (the page is interactive once some are). */
export function shownRowCount() {
  return rowsShown;
}

/** Reads the rows' height from the stylesheet (cards on phones are taller); a change redraws the list. */
export function measureRowHeight() {
  const value = parseFloat(getComputedStyle($('task-list')).getPropertyValue('--row-height'));
  const height = value > 0 ? value : 52;
  if (height !== app.rowHeight) {
    app.rowHeight = height;
    app.dirty.view = true;
    app.dirty.rows = true;
    schedule();
  }
}

/** Works out which tasks are shown (filter, search) and sizes the list for them. */
export function renderView() {
  rebuildView(app.model);
  const count = app.model.view.length;
  $('task-list-inner').style.height = (count * app.rowHeight) + 'px';
  $('task-list').dataset.count = String(count);
  $('list-empty').hidden = !(app.loaded && count === 0);
  app.dirty.rows = true;
  app.dirty.status = true;
}

function makeRow() {
  const row = element('div', 'row');
  row.setAttribute('role', 'listitem');
  const checkCell = element('span', 'col-check');
  const check = element('input', 'row-check');
  check.type = 'checkbox';
  checkCell.appendChild(check);
  const nameCell = element('span', 'col-name');
  const name = element('span', 'name');
  const sub = element('span', 'sub');
  nameCell.append(name, sub);
  const progressCell = element('span', 'col-progress');
  const progress = element('progress', 'progress');
  progress.max = 1000;
  const percent = element('span', 'percent');
  progressCell.append(progress, percent);
  const bytes = element('span', 'col-bytes');
  const speed = element('span', 'col-speed');
  const eta = element('span', 'col-eta');
  const stateCell = element('span', 'col-state');
  const state = element('span', 'badge');
  stateCell.appendChild(state);
  row.append(checkCell, nameCell, progressCell, bytes, speed, eta, stateCell);
  row._parts = { check, name, sub, progress, percent, bytes, speed, eta, state };
  row._key = '';
  return row;
}

function fillRow(row, task, index) {
  const p = row._parts;
  const model = app.model;
  row.style.transform = 'translateY(' + (index * app.rowHeight) + 'px)';
  row.dataset.taskId = task.id;
  row.dataset.index = String(index);
  row.dataset.state = task.state;
  row.dataset.bytes = String(task.bytes || 0);
  row.classList.toggle('selected', model.selected.has(task.id));
  row.classList.toggle('focused', model.focused === task.id);
  p.check.checked = model.selected.has(task.id);
  // What changes seldom is written only when it changed.
  const key = task.id + '|' + task.state + '|' + (task.error ? task.error.message : '') + '|' + (task.note || '') + '|' + (task.path || '') + '|' + (task.node || '');
  if (row._key !== key) {
    row._key = key;
    const name = taskName(task);
    p.name.textContent = name;
    p.name.title = name;
    p.check.setAttribute('aria-label', 'Select ' + name);
    if (task.state === 'failed' && task.error) {
      p.sub.textContent = shownUrl(withoutUrl(task.error.message, task.url));
      p.sub.className = 'sub error-text';
    } else if (task.note) {
      p.sub.textContent = task.note;
      p.sub.className = 'sub note';
    } else {
      p.sub.textContent = shownUrl(task.url) + (task.node ? ' · node ' + task.node : '');
      p.sub.className = 'sub';
    }
    p.sub.title = p.sub.textContent;
    p.state.textContent = task.state;
    p.state.className = 'badge state-' + task.state;
  }
  const progress = progressOf(task);
  if (progress.value === null) p.progress.removeAttribute('value'); // indeterminate
  else p.progress.value = progress.value;
  p.percent.textContent = progress.percent;
  p.bytes.textContent = bytesOf(task);
  p.speed.textContent = task.state === 'running' ? formatSpeed(task.bytesPerSecond) : '—';
  p.eta.textContent = formatDuration(etaOf(task));
}

/** Draws the rows in sight (and a few around them) from the pool. */
export function renderRows() {
  const list = $('task-list');
  const inner = $('task-list-inner');
  const view = app.model.view;
  const { first, last } = visibleRows(list.scrollTop, list.clientHeight || 600, app.rowHeight, view.length, OVERSCAN);
  const needed = last - first;
  while (rowPool.length < needed) {
    const row = makeRow();
    rowPool.push(row);
    inner.appendChild(row);
  }
  for (let i = 0; i < needed; i++) {
    const row = rowPool[i];
    const task = app.model.tasks.get(view[first + i]);
    if (!task) continue;
    if (row.hidden) row.hidden = false;
    fillRow(row, task, first + i);
  }
  for (let i = needed; i < Math.max(rowsShown, needed); i++) {
    const row = rowPool[i];
    if (row && !row.hidden) { row.hidden = true; delete row.dataset.taskId; row._key = ''; }
  }
  rowsShown = needed;
}

/** The counts of the status bar, the selection's size and the buttons that act on it. */
export function renderStatus() {
  const model = app.model;
  $('status-counts').textContent = statusText(model);
  const n = model.selected.size;
  $('selection-count').textContent = n ? n + ' selected' : '';
  for (const id of ACTION_BUTTONS) $(id).disabled = n === 0;
  const all = $('select-all');
  const selection = selectionOfView(model);
  all.checked = selection.all;
  all.indeterminate = selection.some;
}

/**
 * Listens to the list: scrolling, clicks (selection, focus) and keys. `apply` takes the model's effects;
 * `openDetail` shows the focused task's details where they open over the list.
 */
export function wireTaskList(apply, openDetail) {
  const list = $('task-list');
  list.addEventListener('scroll', () => { app.dirty.rows = true; schedule(); }, { passive: true });
  list.addEventListener('click', (event) => {
    const row = event.target.closest('.row');
    if (!row || !row.dataset.taskId) return;
    const out = effects();
    const how = {
      checkbox: event.target.classList.contains('row-check'),
      shift: event.shiftKey,
      ctrl: event.ctrlKey || event.metaKey,
    };
    const opens = clickTask(app.model, row.dataset.taskId, how, out);
    apply(out);
    // A plain tap or click on a task shows its details (over the list where the window is narrow).
    if (opens) openDetail();
  });
  list.addEventListener('keydown', (event) => {
    if (!app.model.view.length) return;
    if (event.key === 'a' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      selectAllShown(app.model, true);
      app.dirty.rows = true;
      app.dirty.status = true;
      schedule();
      return;
    }
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
    event.preventDefault();
    const out = effects();
    const index = moveFocus(app.model, event.key === 'ArrowDown' ? 1 : -1, out);
    const top = scrollToShow(index, app.rowHeight, list.scrollTop, list.clientHeight);
    if (top !== list.scrollTop) list.scrollTop = top;
    apply(out);
  });
  $('select-all').addEventListener('change', () => {
    selectAllShown(app.model, $('select-all').checked);
    app.dirty.rows = true;
    app.dirty.status = true;
    schedule();
  });
}
