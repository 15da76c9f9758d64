// Where things go on screen: the virtual list's visible rows, the segment map's bars and summary, the speed graph's
// line. Pure: numbers in, numbers and text out; the canvases are drawn by charts.mjs (Tests/web/geometry.test.mjs).

import { formatBytes } from './format.mjs';

/** The rows to draw of a list of `count` rows of `rowHeight` px scrolled to `scrollTop` in `height` px: [first, last). */
export function visibleRows(scrollTop, height, rowHeight, count, overscan) {
  const first = Math.min(count, Math.max(0, Math.floor(scrollTop / rowHeight) - overscan));
  const last = Math.min(count, Math.ceil((scrollTop + height) / rowHeight) + overscan);
  return { first: first, last: Math.max(first, last) };
}

/** The scroll position that shows row `index` whole, moving as little as possible. */
export function scrollToShow(index, rowHeight, scrollTop, height) {
  const top = index * rowHeight;
  if (top < scrollTop) return top;
  if (top + rowHeight > scrollTop + height) return top + rowHeight - height;
  return scrollTop;
}

/** The bytes in `[start, end)` ranges; malformed ones count nothing. */
export function sumRanges(ranges) {
  let sum = 0;
  for (const r of ranges) if (Array.isArray(r) && r.length === 2) sum += Math.max(0, r[1] - r[0]);
  return sum;
}

/**
 * What the segment map of `map` (`{total, done, active}`, or null) shows for a task in `state`: the ranges done and
 * being fetched (only a running task has some: a map read before it paused may still list them), the bytes of
 * each and not yet fetched, the legend's entries and the summary line.
 */
export function segmentMapSummary(map, state) {
  const done = map ? map.done || [] : [];
  const active = map && state === 'running' ? map.active || [] : [];
  const total = map && typeof map.total === 'number' ? map.total : null;
  const doneBytes = sumRanges(done);
  const activeBytes = sumRanges(active);
  const todoBytes = total === null ? 0 : Math.max(0, total - doneBytes - activeBytes);
  let text = '';
  if (map && total === null) text = formatBytes(doneBytes) + ' done; size unknown';
  else if (map) {
    text = formatBytes(doneBytes) + ' of ' + formatBytes(total) + ' done in ' + done.length
      + (done.length === 1 ? ' range' : ' ranges') + (active.length ? ', ' + active.length + ' being fetched' : '')
      + (todoBytes > 0 ? ', ' + formatBytes(todoBytes) + ' not yet' : '');
  }
  return {
    done: done, active: active, total: total, doneBytes: doneBytes, activeBytes: activeBytes, todoBytes: todoBytes,
    // The legend names what the map shows, nothing else.
    legend: { done: doneBytes > 0, active: activeBytes > 0, todo: todoBytes > 0 },
    text: text,
  };
}

/**
 * The bars of byte ranges on a map `width` px wide whose right end is byte `scaleTo`: whole pixels that cover each
 * range, at least 1 px wide, so that a range too small to see still shows.
 */
export function rangeBars(ranges, scaleTo, width) {
  const bars = [];
  for (const r of ranges) {
    const x = Math.floor((r[0] / scaleTo) * width);
    const end = Math.ceil((r[1] / scaleTo) * width);
    bars.push({ x: x, width: Math.max(1, end - x) });
  }
  return bars;
}

/** The byte at the map's right end: the size, else the end of the furthest range (at least 1). */
export function mapScale(total, done, active) {
  return total || Math.max(1, ...done.map((r) => r[1]), ...active.map((r) => r[1]));
}

/** The speed graph's scale: the next power of two at or above `value` bytes per second (1 KiB at least). */
export function graphScale(value) {
  if (value <= 0) return 1024;
  return Math.pow(2, Math.ceil(Math.log2(value)));
}

/**
 * The speed graph's points, oldest first: `history` is a ring of one sample a second whose oldest is at `head`,
 * drawn on `width` × `height` px with `pad` px above and below, `top` bytes per second at the top.
 */
export function graphPoints(history, head, width, height, pad, top) {
  const n = history.length;
  const points = [];
  for (let i = 0; i < n; i++) {
    const value = history[(head + i) % n];
    points.push({ x: n > 1 ? (i * width) / (n - 1) : 0, y: height - pad - (value / top) * (height - 2 * pad) });
  }
  return points;
}
