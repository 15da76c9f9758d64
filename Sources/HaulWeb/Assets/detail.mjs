// The detail panel of the focused task: its facts, its own Pause/Resume/Remove buttons and its segment map. Beside
// the list on wide windows; over it (opened by a tap, closed with Close or Escape) on narrow ones.

import { etaOf, formatBytes, formatDuration, formatSpeed, shownUrl, taskName } from './format.mjs';
import { $, app } from './page.mjs';
import { drawSegments } from './charts.mjs';

const NARROW = window.matchMedia('(max-width: 980px)'); // the details open over the list (app.css)

/** Writes the focused task's facts (or the empty panel). */
export function renderDetail() {
  const id = app.model.focused;
  const task = id ? app.model.tasks.get(id) : null;
  $('detail').dataset.taskId = task ? task.id : '';
  $('detail-empty').hidden = !!task;
  $('detail-body').hidden = !task;
  if (!task) return;
  $('detail-name').textContent = taskName(task);
  $('detail-state').textContent = task.state;
  $('detail-url').textContent = shownUrl(task.url);
  // In a fleet, the node that runs the task (or ran it last).
  $('detail-node-label').hidden = !task.node;
  $('detail-node').hidden = !task.node;
  $('detail-node').textContent = task.node || '';
  $('detail-path').textContent = task.path || '—';
  $('detail-bytes').textContent = typeof task.total === 'number'
    ? formatBytes(task.bytes || 0) + ' of ' + formatBytes(task.total) + ' (' + (task.bytes || 0).toLocaleString() + ' B)'
    : formatBytes(task.bytes || 0);
  $('detail-speed').textContent = task.state === 'running'
    ? formatSpeed(task.bytesPerSecond) + ', ' + formatDuration(etaOf(task)) + ' left'
    : '—';
  $('detail-priority').textContent = String(task.priority || 0);
  $('detail-pause').disabled = !(task.state === 'running' || task.state === 'waiting');
  $('detail-resume').disabled = !(task.state === 'paused' || task.state === 'failed' || task.state === 'cancelled');
  const note = task.note || '';
  $('detail-note').textContent = note;
  $('detail-note').hidden = !note;
  $('detail-note-label').hidden = !note;
  const error = task.error ? task.error.message : '';
  $('detail-error').textContent = error;
  $('detail-error').hidden = !error;
  $('detail-error-label').hidden = !error;
}

/** Where the details open over the list (narrow windows), shows them; the Close button takes the focus. */
export function openDetail() {
  if (!NARROW.matches || !app.model.focused) return;
  $('detail').classList.add('open');
  // Drawn while hidden, the map had no width: it is drawn again at the sheet's.
  drawSegments();
  $('detail-close').focus();
}

/** Closes the details shown over the list; the list takes the focus back. */
export function closeDetail() {
  const detail = $('detail');
  if (!detail.classList.contains('open')) return;
  detail.classList.remove('open');
  $('task-list').focus();
}

/** Whether the details are open over the list. */
export function detailIsOpen() {
  return $('detail').classList.contains('open');
}

/** The panel's buttons: `act(method, extra, label)` acts on the focused task. */
export function wireDetail(act) {
  $('detail-close').addEventListener('click', closeDetail);
  $('detail-pause').addEventListener('click', () => act('tasks.pause', null, 'pause'));
  $('detail-resume').addEventListener('click', () => act('tasks.resume', null, 'resume'));
  $('detail-remove').addEventListener('click', () => act('tasks.remove', { deleteFile: false }, 'remove'));
}
