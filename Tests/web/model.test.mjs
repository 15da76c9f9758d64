// The page's model of a session's tasks and its event reducer (Sources/HaulWeb/Assets/model.mjs).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  acceptSegmentMap, addListed, applyEvent, clearTasks, clickTask, createModel, effects, forgetTasks, matches,
  moveFocus, priorityGroups, rebuildView, selectAllShown, selectedIds, selectionOfView, setFilter, setFocus,
  statusText, totalSpeed, upsertTask,
} from '../../Sources/HaulWeb/Assets/model.mjs';
import { forAll, integer, oneOf, random } from './random.mjs';

function task(id, fields) {
  return Object.assign({ id: id, url: 'http://h/' + id + '.bin', state: 'waiting', bytes: 0, total: null, priority: 0 }, fields);
}

function modelWith(...tasks) {
  const model = createModel();
  for (const t of tasks) upsertTask(model, t);
  rebuildView(model);
  return model;
}

test('added tasks are kept in the order added, and a newer copy replaces the fields it has', () => {
  const model = createModel();
  const out = applyEvent(model, { type: 'added', task: task('a') });
  applyEvent(model, { type: 'added', task: task('b', { state: 'running', bytesPerSecond: 5, secondsRemaining: 3 }) });
  assert.equal(out.view, true);
  assert.deepEqual(model.order, ['a', 'b']);
  assert.equal(totalSpeed(model), 5);
  // A copy without secondsRemaining (a task that is not running) drops the old estimate.
  applyEvent(model, { type: 'finished', task: task('b', { state: 'finished', bytes: 10, total: 10, bytesPerSecond: null }) });
  assert.deepEqual(model.order, ['a', 'b']);
  assert.equal(model.tasks.get('b').state, 'finished');
  assert.equal('secondsRemaining' in model.tasks.get('b'), false);
  assert.equal(totalSpeed(model), 0);
});

test('events of tasks the model does not hold change nothing', () => {
  const model = modelWith(task('a'));
  for (const event of [
    { type: 'stateChanged', id: 'x', to: 'running' },
    { type: 'progress', id: 'x', bytes: 5, bytesPerSecond: 1 },
    { type: 'segments', id: 'x', total: 10, done: [[0, 5]], active: [] },
    { type: 'allFinished' },
    { type: 'somethingNewer', id: 'a' },
  ]) {
    const out = applyEvent(model, event);
    assert.deepEqual(out, effects(), JSON.stringify(event));
  }
  assert.deepEqual(model.tasks.get('a'), task('a'));
});

test('progress updates a row only; a state change redraws the view (its filter may hide the task now)', () => {
  const model = modelWith(task('a', { state: 'running' }));
  let out = applyEvent(model, { type: 'progress', id: 'a', bytes: 50, total: 100, bytesPerSecond: 10, secondsRemaining: 5 });
  assert.equal(out.rows, true);
  assert.equal(out.view, false);
  assert.equal(model.tasks.get('a').bytes, 50);
  assert.equal(totalSpeed(model), 10);
  out = applyEvent(model, { type: 'stateChanged', id: 'a', to: 'paused' });
  assert.equal(out.view, true);
  const paused = model.tasks.get('a');
  assert.equal(paused.bytesPerSecond, null);
  assert.equal('secondsRemaining' in paused, false);
  assert.equal(totalSpeed(model), 0);
});

test('a removed event forgets the task, its selection and its focus; an unknown id changes nothing', () => {
  const model = modelWith(task('a', { state: 'running', bytesPerSecond: 5 }), task('b'));
  clickTask(model, 'a', {});
  setFocus(model, 'a');
  const out = applyEvent(model, { type: 'removed', id: 'a' });
  assert.equal(out.view, true);
  assert.equal(model.tasks.has('a'), false);
  assert.equal(model.selected.has('a'), false);
  assert.equal(model.focused, null);
  assert.equal(totalSpeed(model), 0);
  assert.deepEqual(model.order, ['b']);
  assert.equal(applyEvent(model, { type: 'removed', id: 'nope' }).view, false);
});

test('a progress event clears a note (a resumed task is moving again)', () => {
  const model = modelWith(task('a', { state: 'running', note: 'waiting for the server' }));
  applyEvent(model, { type: 'progress', id: 'a', bytes: 1, bytesPerSecond: 1 });
  assert.equal(model.tasks.get('a').note, null);
});

test('a reset reloads every task', () => {
  const model = modelWith(task('a'));
  assert.equal(applyEvent(model, { type: 'reset' }).reload, true);
});

test('the focused task\'s map: read when focused, from the stream while running, read again when it stops', () => {
  const model = modelWith(task('a', { state: 'running', total: 100 }), task('b'));
  let out = setFocus(model, 'a');
  assert.equal(out.loadSegments, 'a');
  assert.equal(out.detail && out.segments && out.rows, true);
  assert.deepEqual(setFocus(model, 'a'), effects(), 'focusing it again asks nothing');
  // A stream reading wins over an answer to an older question.
  out = applyEvent(model, { type: 'segments', id: 'a', total: 100, done: [[0, 10], [50, 60]], active: [[10, 50]] });
  assert.equal(out.segments, true);
  assert.equal(acceptSegmentMap(model, 'a', { total: 100, done: [[0, 5]], active: [] }), false);
  assert.deepEqual(model.segments.done, [[0, 10], [50, 60]]);
  // Another task's readings are not shown.
  assert.equal(applyEvent(model, { type: 'segments', id: 'b', total: 1, done: [], active: [] }).segments, false);
  // It stops: the daemon's map is read again and then taken.
  out = applyEvent(model, { type: 'stateChanged', id: 'a', to: 'paused' });
  assert.equal(out.loadSegments, 'a');
  assert.equal(out.detail, true);
  assert.equal(acceptSegmentMap(model, 'a', { total: 100, done: [[0, 60]] }), true);
  assert.deepEqual(model.segments, { id: 'a', total: 100, done: [[0, 60]], active: [] });
  // An answer for a task no longer focused is dropped.
  setFocus(model, 'b');
  assert.equal(acceptSegmentMap(model, 'a', { total: 100, done: [] }), false);
  assert.equal(model.segments, null);
});

test('a single-connection download\'s map is one range from 0, the rest being fetched', () => {
  const model = modelWith(task('a', { state: 'running' }));
  setFocus(model, 'a');
  acceptSegmentMap(model, 'a', { total: 1000, done: [], active: [] });
  const out = applyEvent(model, { type: 'progress', id: 'a', bytes: 400, total: 1000, bytesPerSecond: 1 });
  assert.equal(out.segments, true);
  assert.deepEqual(model.segments, { id: 'a', total: 1000, done: [[0, 400]], active: [[400, 1000]] });
  applyEvent(model, { type: 'progress', id: 'a', bytes: 1000, total: 1000, bytesPerSecond: 1 });
  assert.deepEqual(model.segments.active, []);
});

test('a finished or failed focused task has its map read again', () => {
  for (const type of ['finished', 'failed']) {
    const model = modelWith(task('a', { state: 'running' }));
    setFocus(model, 'a');
    applyEvent(model, { type: 'segments', id: 'a', total: 10, done: [[0, 5]], active: [[5, 10]] });
    const out = applyEvent(model, { type: type, task: task('a', { state: type }) });
    assert.equal(out.loadSegments, 'a', type);
    assert.equal(model.segmentsFromStream, false);
  }
});

test('a listed page does not overwrite newer news the stream brought', () => {
  const model = createModel();
  applyEvent(model, { type: 'added', task: task('a', { state: 'running', bytes: 70 }) });
  const out = addListed(model, [task('a', { state: 'waiting', bytes: 0 }), task('b')]);
  assert.equal(out.view, true);
  assert.equal(model.tasks.get('a').bytes, 70);
  assert.deepEqual(model.order, ['a', 'b']);
  assert.deepEqual(addListed(model, undefined).view, true, 'an empty answer');
});

test('removed tasks leave the selection, the speeds and the focus', () => {
  const model = modelWith(task('a', { state: 'running', bytesPerSecond: 3 }), task('b'), task('c'));
  selectAllShown(model, true);
  setFocus(model, 'a');
  const out = forgetTasks(model, ['a', 'b']);
  assert.deepEqual(model.order, ['c']);
  assert.deepEqual(Array.from(model.selected), ['c']);
  assert.equal(model.focused, null);
  assert.equal(out.detail, true);
  assert.equal(totalSpeed(model), 0);
  clearTasks(model);
  assert.equal(model.tasks.size + model.order.length + model.selected.size, 0);
});

test('the filter shows active (running or waiting) or one state, and the search a name or URL', () => {
  const running = task('r', { state: 'running', url: 'http://host/Movie.MKV' });
  const waiting = task('w', { state: 'waiting', path: '/dl/notes.txt' });
  const failed = task('f', { state: 'failed' });
  assert.equal(matches(running, 'active', ''), true);
  assert.equal(matches(waiting, 'active', ''), true);
  assert.equal(matches(failed, 'active', ''), false);
  assert.equal(matches(failed, 'failed', ''), true);
  assert.equal(matches(failed, '', ''), true);
  assert.equal(matches(running, '', 'movie'), true);
  assert.equal(matches(waiting, '', 'notes'), true, 'by its file name');
  assert.equal(matches(waiting, '', 'w.bin'), true, 'by its URL');
  assert.equal(matches(waiting, '', 'movie'), false);
});

test('a new filter drops what it hides from the selection; the status bar counts states and what is shown', () => {
  const model = modelWith(task('a', { state: 'running' }), task('b', { state: 'finished' }), task('c', { state: 'finished' }));
  selectAllShown(model, true);
  assert.deepEqual(selectionOfView(model), { all: true, some: false });
  setFilter(model, 'finished', '  ');
  rebuildView(model);
  assert.deepEqual(model.view, ['b', 'c']);
  assert.deepEqual(selectedIds(model), ['b', 'c']);
  assert.equal(statusText(model), '3 tasks · 1 running · 2 finished · 2 shown');
  setFilter(model, '', 'C.BIN');
  rebuildView(model);
  assert.deepEqual(model.view, ['c']);
  assert.deepEqual(selectedIds(model), ['c']);
  // Tasks that arrive later are not dropped from the selection by the same filter.
  model.pruneSelection = false;
  model.selected.add('a');
  rebuildView(model);
  assert.deepEqual(selectedIds(model), ['a', 'c']);
});

test('clicks: plain selects one and opens it, ctrl or the checkbox toggles, shift selects a range', () => {
  const model = modelWith(task('a'), task('b'), task('c'), task('d'));
  assert.equal(clickTask(model, 'b', {}), true);
  assert.deepEqual(selectedIds(model), ['b']);
  assert.equal(model.focused, 'b');
  assert.equal(clickTask(model, 'd', { shift: true }), false);
  assert.deepEqual(selectedIds(model), ['b', 'c', 'd']);
  assert.equal(clickTask(model, 'c', { ctrl: true }), false);
  assert.deepEqual(selectedIds(model), ['b', 'd']);
  assert.equal(model.focused, 'c', 'ctrl-click focuses');
  assert.equal(clickTask(model, 'a', { checkbox: true }), false);
  assert.deepEqual(selectedIds(model), ['a', 'b', 'd']);
  assert.equal(model.focused, 'c', 'a checkbox does not move the focus');
  // A shift-click from an anchor the filter hides now: that task alone.
  model.tasks.get('a').state = 'finished';
  setFilter(model, 'waiting', '');
  rebuildView(model);
  clickTask(model, 'd', { shift: true });
  assert.deepEqual(selectedIds(model), ['d']);
});

test('arrow keys move the focus and the selection along what is shown', () => {
  const model = modelWith(task('a'), task('b'), task('c'));
  assert.equal(moveFocus(model, 1), 0);
  assert.equal(model.focused, 'a');
  assert.equal(moveFocus(model, -1), 0, 'not before the first');
  moveFocus(model, 1);
  assert.equal(moveFocus(model, 1), 2);
  assert.equal(moveFocus(model, 1), 2, 'not past the last');
  assert.deepEqual(selectedIds(model), ['c']);
  assert.equal(moveFocus(createModel(), 1), -1);
});

test('priorities move by group, one call per new priority', () => {
  const model = modelWith(task('a', { priority: 2 }), task('b'), task('c', { priority: 2 }), task('d'));
  selectAllShown(model, true);
  model.selected.delete('d');
  assert.deepEqual(Array.from(priorityGroups(model, 1)), [[3, ['a', 'c']], [1, ['b']]]);
});

// ------------------------------------------------------------------ properties of any sequence of events

const ids = ['t0', 't1', 't2', 't3', 't4', 't5'];
const states = ['waiting', 'running', 'paused', 'finished', 'failed', 'cancelled'];

function randomTask() {
  const fields = { state: oneOf(states), bytes: integer(0, 1000), total: random() < 0.3 ? null : 1000 };
  if (fields.state === 'running') fields.bytesPerSecond = integer(0, 50);
  return task(oneOf(ids), fields);
}

function randomStep() {
  const id = oneOf(ids);
  switch (integer(0, 11)) {
    case 0: return { event: { type: 'added', task: randomTask() } };
    case 1: return { event: { type: 'stateChanged', id: id, to: oneOf(states) } };
    case 2: case 3: return { event: { type: 'progress', id: id, bytes: integer(0, 1000), bytesPerSecond: integer(0, 50), secondsRemaining: integer(0, 9) } };
    case 4: return { event: { type: oneOf(['finished', 'failed']), task: randomTask() } };
    case 5: return { event: { type: 'segments', id: id, total: 1000, done: [[0, integer(0, 500)]], active: [] } };
    case 6: return random() < 0.5 ? { forget: [id] } : { event: { type: 'removed', id: id } };
    case 7: return { focus: random() < 0.2 ? null : id };
    case 8: return { click: id, how: { shift: random() < 0.3, ctrl: random() < 0.3, checkbox: random() < 0.3 } };
    case 9: return { filter: oneOf(['', 'active', 'running', 'finished']), search: oneOf(['', 't1', 'bin']) };
    case 10: return { list: [randomTask(), randomTask()] };
    default: return { map: id };
  }
}

function run(model, step) {
  if (step.event) return applyEvent(model, step.event);
  if (step.forget) return forgetTasks(model, step.forget);
  if ('focus' in step) return setFocus(model, step.focus);
  if (step.click) {
    rebuildView(model);
    if (!model.viewIndex.has(step.click)) return effects();
    const out = effects();
    clickTask(model, step.click, step.how, out);
    return out;
  }
  if ('filter' in step) { setFilter(model, step.filter, step.search); return effects(); }
  if (step.list) return addListed(model, step.list);
  acceptSegmentMap(model, step.map, { total: 1000, done: [[0, 1]], active: [] });
  return effects();
}

test('whatever the events and clicks, the model stays consistent', () => {
  forAll('event sequences', () => Array.from({ length: integer(1, 60) }, randomStep), (steps) => {
    const model = createModel();
    for (const step of steps) {
      const out = run(model, step);
      assert.equal(typeof out, 'object');
      rebuildView(model);
      // The order holds each task once, and only tasks.
      assert.equal(new Set(model.order).size, model.order.length);
      assert.deepEqual(new Set(model.order), new Set(model.tasks.keys()));
      // The view is the shown tasks in the order added, and its index says where each is.
      assert.deepEqual(model.view, model.order.filter((id) => matches(model.tasks.get(id), model.filter, model.search)));
      model.view.forEach((id, i) => assert.equal(model.viewIndex.get(id), i));
      // Only tasks are selected; only running tasks with a speed count in the total.
      for (const id of model.selected) assert.ok(model.tasks.has(id), 'selected ' + id);
      for (const [id, bps] of model.speeds) {
        const t = model.tasks.get(id);
        assert.ok(t && t.state === 'running' && t.bytesPerSecond === bps && bps > 0, 'speed of ' + id);
      }
      // A map shown is the focused task's.
      if (model.segments) assert.equal(model.segments.id, model.focused);
      if (model.focused === null) assert.equal(model.segments, null);
    }
  }, 400);
});
