// The two canvases: the session's speed graph and the focused task's segment map. What goes where is
// geometry.mjs's; this paints it with the stylesheet's colours.

import { formatBytes, formatSpeed } from './format.mjs';
import { graphPoints, graphScale, mapScale, rangeBars, segmentMapSummary } from './geometry.mjs';
import { $, GRAPH_SECONDS, app } from './page.mjs';

/** Sizes a canvas's pixels to its box on screen; returns the device pixel ratio. */
function sizeCanvas(canvas) {
  const ratio = window.devicePixelRatio || 1;
  const width = Math.max(1, Math.floor(canvas.clientWidth * ratio));
  const height = Math.max(1, Math.floor(canvas.clientHeight * ratio));
  if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
  return ratio;
}

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function tracePath(ctx, points) {
  ctx.beginPath();
  points.forEach((p, i) => { if (i === 0) ctx.moveTo(p.x, p.y); else ctx.lineTo(p.x, p.y); });
}

/** The speed graph of the last 5 minutes, with its scale. */
export function drawGraph() {
  const canvas = $('speed-graph');
  if (!canvas) return;
  const ratio = sizeCanvas(canvas);
  const ctx = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  let max = 0;
  for (let i = 0; i < GRAPH_SECONDS; i++) max = Math.max(max, app.history[i]);
  const top = graphScale(max);
  $('speed-graph-max').textContent = 'max ' + formatSpeed(max === 0 ? 0 : max).replace('—', '0 B/s') + ' · scale ' + formatBytes(top) + '/s';
  ctx.strokeStyle = cssVar('--grid');
  ctx.lineWidth = 1;
  for (let i = 1; i < 4; i++) {
    const y = Math.round((h * i) / 4) + 0.5;
    ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(w, y); ctx.stroke();
  }
  const points = graphPoints(app.history, app.historyHead, w, h, 2 * ratio, top);
  tracePath(ctx, points);
  ctx.lineTo(w, h);
  ctx.lineTo(0, h);
  ctx.closePath();
  ctx.fillStyle = cssVar('--graph-fill');
  ctx.fill();
  tracePath(ctx, points);
  ctx.strokeStyle = cssVar('--accent');
  ctx.lineWidth = 1.5 * ratio;
  ctx.stroke();
}

/**
 * The focused task's segment map: its bars, its legend and summary, and (for tests and tools) its numbers in the
 * canvas's `data-*` attributes.
 */
export function drawSegments() {
  const canvas = $('segment-map');
  if (!canvas) return;
  const map = app.model.segments;
  const task = map ? app.model.tasks.get(map.id) : null;
  const shown = segmentMapSummary(map, task ? task.state : null);
  canvas.dataset.total = shown.total === null ? '' : String(shown.total);
  canvas.dataset.doneBytes = String(shown.doneBytes);
  canvas.dataset.activeBytes = String(shown.activeBytes);
  canvas.dataset.doneRanges = String(shown.done.length);
  canvas.dataset.activeRanges = String(shown.active.length);
  canvas.dataset.todoBytes = String(shown.todoBytes);
  canvas.dataset.map = JSON.stringify({ done: shown.done, active: shown.active });
  $('legend-done').hidden = !shown.legend.done;
  $('legend-active').hidden = !shown.legend.active;
  $('legend-todo').hidden = !shown.legend.todo;
  $('segment-summary').textContent = shown.text;
  sizeCanvas(canvas);
  const ctx = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  ctx.fillStyle = cssVar('--map-todo');
  ctx.fillRect(0, 0, w, h);
  const scaleTo = mapScale(shown.total, shown.done, shown.active);
  for (const [ranges, color] of [[shown.done, '--map-done'], [shown.active, '--map-active']]) {
    ctx.fillStyle = cssVar(color);
    for (const bar of rangeBars(ranges, scaleTo, w)) ctx.fillRect(bar.x, 0, bar.width, h);
  }
}
