// The event stream's reader and the login key's form (Sources/HaulWeb/Assets/eventStream.mjs). Run: node --test Tests/web/
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { EventStreamParser, keyFromHash } from '../../Sources/HaulWeb/Assets/eventStream.mjs';
import { forAll, integer, oneOf } from './random.mjs';

function readAll(chunks) {
  const parser = new EventStreamParser();
  const out = [];
  for (const chunk of chunks) out.push(...parser.push(chunk));
  return out;
}

test('what the dashboard sends: a cursor without data, comments, events and a reset', () => {
  const text = 'id: run.5\n: ready\n\nid: run.6\ndata: {"type":"added"}\n\n: keepalive\n\nid: run.9\ndata: {"type":"reset"}\n\n';
  assert.deepEqual(readAll([text]), [
    { lastEventId: 'run.5', type: 'message', data: undefined },
    { lastEventId: 'run.6', type: 'message', data: '{"type":"added"}' },
    { lastEventId: 'run.6', type: 'message', data: undefined },
    { lastEventId: 'run.9', type: 'message', data: '{"type":"reset"}' },
  ]);
});

test('data lines join with newlines; fields without a space, other line ends, event types and retry are read', () => {
  assert.deepEqual(readAll(['data:a\r\ndata: b\rdata\r\n\r\n']), [{ lastEventId: '', type: 'message', data: 'a\nb\n' }]);
  assert.deepEqual(readAll(['event: ping\ndata: x\n\nretry: 1500\nretry: soon\nunknown: y\ndata: z\n\n']), [
    { lastEventId: '', type: 'ping', data: 'x' },
    { retry: 1500 },
    { lastEventId: '', type: 'message', data: 'z' },
  ]);
  assert.deepEqual(readAll(['id: a\0b\ndata: x\n\n']), [{ lastEventId: '', type: 'message', data: 'x' }], 'an id with NUL is ignored');
  assert.deepEqual(readAll(['data: unfinished']), [], 'an event is not dispatched before its blank line');
});

test('however the bytes are cut into chunks, the same events come out', () => {
  const lines = ['id: r.1', 'data: {"type":"progress","id":"t1"}', ': keepalive', 'event: other', 'data: second', 'retry: 10', ''];
  const ends = ['\n', '\r\n', '\r'];
  forAll('chunking', () => {
    let text = '';
    const count = integer(1, 30);
    for (let i = 0; i < count; i++) text += oneOf(lines) + oneOf(ends) + (integer(0, 2) === 0 ? oneOf(ends) : '');
    text += '\n\n';
    const chunks = [];
    for (let at = 0; at < text.length;) {
      const size = integer(1, 12);
      chunks.push(text.slice(at, at + size));
      at += size;
    }
    return { text, chunks };
  }, ({ text, chunks }) => {
    assert.deepEqual(readAll(chunks), readAll([text]));
  });
});

test('a login key is 64 hex digits in the fragment #key=…, and nothing else is', () => {
  const key = 'ab'.repeat(32);
  assert.equal(keyFromHash('#key=' + key), key);
  for (const other of ['', '#', '#key=', '#key=' + key + '0', '#key=' + key.slice(1), '#key=' + key.toUpperCase(), '#x=' + key, 'key=' + key, null, undefined]) {
    assert.equal(keyFromHash(other), null, String(other));
  }
});
