// Where the page draws things (Sources/HaulWeb/Assets/geometry.mjs).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  graphPoints, graphScale, mapScale, rangeBars, scrollToShow, segmentMapSummary, sumRanges, visibleRows,
} from '../../Sources/HaulWeb/Assets/geometry.mjs';
import { forAll, integer } from './random.mjs';

test('the list draws the rows in sight and a few around them, never outside the list', () => {
  assert.deepEqual(visibleRows(0, 520, 52, 1000, 8), { first: 0, last: 18 });
  assert.deepEqual(visibleRows(52 * 100, 520, 52, 1000, 8), { first: 92, last: 118 });
  assert.deepEqual(visibleRows(0, 520, 52, 3, 8), { first: 0, last: 3 });
  assert.deepEqual(visibleRows(0, 520, 52, 0, 8), { first: 0, last: 0 });
  forAll('scroll positions', () => [integer(0, 10000), integer(1, 2000), integer(20, 120), integer(0, 300)], ([scroll, height, row, count]) => {
    const { first, last } = visibleRows(scroll, height, row, count, 8);
    assert.ok(first >= 0 && first <= last && last <= count);
    // Every row that is at least partly in sight is drawn.
    for (let i = Math.floor(scroll / row); i * row < scroll + height && i < count; i++) assert.ok(i >= first && i < last, `row ${i}`);
  });
});

test('keys scroll the list only as far as needed to show the focused row', () => {
  assert.equal(scrollToShow(5, 50, 0, 500), 0, 'in sight');
  assert.equal(scrollToShow(12, 50, 0, 500), 150, 'below: its bottom at the bottom');
  assert.equal(scrollToShow(2, 50, 400, 500), 100, 'above: its top at the top');
});

test('ranges count their bytes; malformed ones count nothing', () => {
  assert.equal(sumRanges([[0, 10], [20, 25]]), 15);
  assert.equal(sumRanges([[10, 0], [1], 'x', [5, 6]]), 1);
  assert.equal(sumRanges([]), 0);
});

test('the map shows ranges being fetched only while the task runs, and the legend names only what it shows', () => {
  const map = { total: 100, done: [[0, 30], [50, 60]], active: [[30, 50]] };
  const running = segmentMapSummary(map, 'running');
  assert.equal(running.doneBytes, 40);
  assert.equal(running.activeBytes, 20);
  assert.equal(running.todoBytes, 40);
  assert.deepEqual(running.legend, { done: true, active: true, todo: true });
  assert.equal(running.text, '40 B of 100 B done in 2 ranges, 1 being fetched, 40 B not yet');
  const paused = segmentMapSummary(map, 'paused');
  assert.deepEqual(paused.active, []);
  assert.equal(paused.todoBytes, 60);
  assert.deepEqual(paused.legend, { done: true, active: false, todo: true });
  const finished = segmentMapSummary({ total: 100, done: [[0, 100]], active: [] }, 'finished');
  assert.deepEqual(finished.legend, { done: true, active: false, todo: false });
  assert.equal(finished.text, '100 B of 100 B done in 1 range');
  const unknown = segmentMapSummary({ total: null, done: [[0, 2048]] }, 'running');
  assert.equal(unknown.text, '2.0 KiB done; size unknown');
  assert.equal(unknown.todoBytes, 0);
  const none = segmentMapSummary(null, null);
  assert.equal(none.text, '');
  assert.deepEqual(none.legend, { done: false, active: false, todo: false });
});

test('bars cover their ranges on the map, each at least a pixel wide', () => {
  assert.deepEqual(rangeBars([[0, 50], [50, 51]], 100, 200), [{ x: 0, width: 100 }, { x: 100, width: 2 }]);
  assert.deepEqual(rangeBars([[10, 10]], 1000, 100), [{ x: 1, width: 1 }]);
  forAll('ranges', () => {
    const total = integer(1, 2 ** 40);
    const start = integer(0, total - 1);
    return [total, start, integer(start, total), integer(1, 4000)];
  }, ([total, start, end, width]) => {
    const [bar] = rangeBars([[start, end]], total, width);
    assert.ok(bar.width >= 1);
    assert.ok(bar.x <= (start / total) * width + 1e-9 && bar.x + bar.width >= (end / total) * width - 1e-9, JSON.stringify(bar));
    assert.ok(bar.x >= 0 && bar.x <= width);
  });
  assert.equal(mapScale(500, [[0, 900]], []), 500);
  assert.equal(mapScale(null, [[0, 900]], [[900, 1200]]), 1200);
  assert.equal(mapScale(null, [], []), 1);
});

test('the graph\'s scale is the next power of two, and its line stays inside the canvas', () => {
  assert.equal(graphScale(0), 1024);
  assert.equal(graphScale(1000), 1024);
  assert.equal(graphScale(1025), 2048);
  assert.equal(graphScale(2 ** 20), 2 ** 20);
  forAll('speed histories', () => Array.from({ length: integer(2, 300) }, () => integer(0, 2 ** 32)), (samples) => {
    const history = Float64Array.from(samples);
    const top = graphScale(Math.max(...samples));
    assert.ok(top >= Math.max(...samples));
    const head = integer(0, samples.length - 1);
    const points = graphPoints(history, head, 600, 110, 2, top);
    assert.equal(points.length, samples.length);
    assert.equal(points[0].x, 0);
    assert.equal(points[points.length - 1].x, 600);
    for (const p of points) assert.ok(p.y >= 2 - 1e-9 && p.y <= 108 + 1e-9, JSON.stringify(p));
    // The oldest sample is drawn first; the newest last.
    assert.equal(points[0].y, 110 - 2 - (samples[head] / top) * 106);
  }, 100);
});
