// The page's formatters (Sources/HaulWeb/Assets/format.mjs). Run: node --test Tests/web/
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  bytesOf, etaOf, formatBytes, formatDuration, formatRateInput, formatSpeed, parseRate, progressOf, shownUrl, taskName, withoutUrl,
} from '../../Sources/HaulWeb/Assets/format.mjs';
import { forAll, integer, oneOf } from './random.mjs';

test('bytes are written in 1024-based units with one decimal, and unknown as ?', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1024), '1.0 KiB');
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(3 * 1024 * 1024), '3.0 MiB');
  assert.equal(formatBytes(5 * 1024 ** 4), '5.0 TiB');
  assert.equal(formatBytes(2048 * 1024 ** 4), '2048.0 TiB', 'TiB is the largest unit');
  for (const unknown of [null, undefined, NaN, Infinity]) assert.equal(formatBytes(unknown), '?');
});

test('every size is written with the largest unit that keeps the number at least 1', () => {
  forAll('sizes', () => integer(0, 2 ** 52), (n) => {
    const [number, unit] = formatBytes(n).split(' ');
    const power = ['B', 'KiB', 'MiB', 'GiB', 'TiB'].indexOf(unit);
    assert.ok(power >= 0, unit);
    assert.ok(Math.abs(Number(number) * 1024 ** power - n) <= 0.05 * 1024 ** power + 0.5, `${n} → ${number} ${unit}`);
    if (power > 0) assert.ok(n >= 1024 ** power, `${n} → ${number} ${unit}`);
    if (power < 4) assert.ok(n < 1024 ** (power + 1), `${n} → ${number} ${unit}`);
  });
});

test('a speed is bytes a second, and nothing moving is a dash', () => {
  assert.equal(formatSpeed(2 * 1024 * 1024), '2.0 MiB/s');
  for (const none of [0, -5, null, undefined]) assert.equal(formatSpeed(none), '—');
});

test('durations are written in their two largest units, and unknown ones as a dash', () => {
  assert.equal(formatDuration(0), '0 s');
  assert.equal(formatDuration(59.4), '59 s');
  assert.equal(formatDuration(185), '3 min 5 s');
  assert.equal(formatDuration(2 * 3600 + 10 * 60 + 59), '2 h 10 min');
  assert.equal(formatDuration(86400 + 4 * 3600), '1 d 4 h');
  for (const unknown of [null, undefined, -1, NaN, Infinity]) assert.equal(formatDuration(unknown), '—');
});

test('rates are read in the notation of haul --limit-rate', () => {
  const cases = {
    '500K': 500 * 1024, '2M': 2 * 1024 ** 2, '1.5G': 1.5 * 1024 ** 3, '1T': 1024 ** 4, '65536': 65536,
    '2m': 2 * 1024 ** 2, '2MiB': 2 * 1024 ** 2, '2MB/s': 2 * 1024 ** 2, '300k/s': 300 * 1024, ' 4K ': 4096, '.5K': 512,
    '0': 0, // the daemon says a rate must be at least 1; the page does not say it again
  };
  for (const [text, bytes] of Object.entries(cases)) assert.equal(parseRate(text), bytes, text);
  assert.equal(parseRate(''), null);
  assert.equal(parseRate('   '), null);
  for (const text of ['fast', '2 M', '-1', '2X', '1e3', 'M', '2M/h', '0x10']) assert.ok(Number.isNaN(parseRate(text)), text);
});

test('a rate the fields show reads back as the same rate', () => {
  forAll('rates', () => integer(1, 2 ** 45), (bps) => {
    assert.equal(parseRate(formatRateInput(bps)), bps, formatRateInput(bps));
  });
  assert.equal(formatRateInput(2 * 1024 * 1024), '2M');
  assert.equal(formatRateInput(300 * 1024), '300K');
  assert.equal(formatRateInput(1000), '1000');
  assert.equal(formatRateInput(null), '');
});

test('a task is named by its file, else its URL\'s last part (decoded), else its host', () => {
  assert.equal(taskName({ id: 'a', url: 'http://h/x/y.iso', path: '/dl/renamed.iso' }), 'renamed.iso');
  assert.equal(taskName({ id: 'a', url: 'http://h/x/some%20file.iso' }), 'some file.iso');
  assert.equal(taskName({ id: 'a', url: 'http://h/x/bad%zzname' }), 'bad%zzname', 'kept encoded when it does not decode');
  assert.equal(taskName({ id: 'a', url: 'https://example.com:8443/' }), 'example.com:8443');
  assert.equal(taskName({ id: 'a', url: 'http://h/dir/', path: '/' }), 'dir');
  assert.equal(taskName({ id: 'a', url: 'not a url' }), 'not a url');
  assert.equal(taskName({ id: 'the-id', url: '' }), 'the-id');
});

test('a message loses the URL it starts with, never all of its text', () => {
  const url = 'http://h/f.bin';
  assert.equal(withoutUrl(url + ': the server answered 404', url), 'the server answered 404');
  assert.equal(withoutUrl('the server answered 404', url), 'the server answered 404');
  assert.equal(withoutUrl(url, url), url);
  assert.equal(withoutUrl(null, url), '');
});

test('only a running task has an ETA: the daemon\'s, else from its speed', () => {
  assert.equal(etaOf({ state: 'paused', secondsRemaining: 5 }), null);
  assert.equal(etaOf({ state: 'running', secondsRemaining: 5, bytesPerSecond: 1, total: 100, bytes: 0 }), 5);
  assert.equal(etaOf({ state: 'running', bytesPerSecond: 10, total: 100, bytes: 50 }), 5);
  assert.equal(etaOf({ state: 'running', bytesPerSecond: 10, total: 100, bytes: 150 }), 0);
  assert.equal(etaOf({ state: 'running', bytesPerSecond: 10, total: null, bytes: 50 }), null);
  assert.equal(etaOf({ state: 'running', bytesPerSecond: 0, total: 100, bytes: 50 }), null);
});

test('progress is in thousandths of a known size, full when finished, else indeterminate', () => {
  assert.deepEqual(progressOf({ state: 'running', bytes: 512, total: 1024 }), { value: 500, percent: '50%' });
  assert.deepEqual(progressOf({ state: 'running', bytes: 2048, total: 1024 }), { value: 1000, percent: '200%' });
  assert.deepEqual(progressOf({ state: 'finished', bytes: 7, total: null }), { value: 1000, percent: '100%' });
  assert.deepEqual(progressOf({ state: 'running', bytes: 7 }), { value: null, percent: '' });
  assert.deepEqual(progressOf({ state: 'finished', bytes: 0, total: 0 }), { value: 1000, percent: '100%' });
  forAll('progress', () => [integer(0, 2 ** 40), integer(1, 2 ** 40)], ([bytes, total]) => {
    const { value } = progressOf({ state: 'running', bytes: Math.min(bytes, total), total: total });
    assert.ok(value >= 0 && value <= 1000 && Number.isInteger(value));
  });
});

test('a row\'s bytes show the size when it is known', () => {
  assert.equal(bytesOf({ bytes: 1024, total: 4096 }), '1.0 KiB / 4.0 KiB');
  assert.equal(bytesOf({ bytes: 1024, total: null }), '1.0 KiB');
  assert.equal(bytesOf({}), '0 B');
});

test('a URL is shown without its password or the values of signature, credential and token parameters', () => {
  assert.equal(shownUrl('https://bob:hunter2@example.com/f.bin'), 'https://***@example.com/f.bin');
  assert.equal(
    shownUrl('https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc123&x-id=GetObject'),
    'https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&x-id=GetObject');
  assert.equal(shownUrl('https://a.blob.core.windows.net/c/f?sv=2020&sig=Zm9v%3D'), 'https://a.blob.core.windows.net/c/f?sv=2020&sig=***');
  assert.equal(shownUrl('https://example.com/a?token=&b=1'), 'https://example.com/a?token=&b=1', 'an empty value hides nothing');
  assert.equal(shownUrl('https://example.com/user@host/f?signature=s'), 'https://example.com/user@host/f?signature=***', 'an @ in the path is not userinfo');
  assert.equal(taskName({ url: 'https://u:p@example.com/' }), 'example.com');
});

test('whatever the URL, the secrets it carries are never shown and the rest is kept', () => {
  const names = ['X-Amz-Signature', 'sig', 'token', 'access_token', 'Signature', 'x-goog-credential'];
  const generate = () => {
    const secret = 'S' + integer(1000, 9_999_999);
    const other = 'keep' + integer(0, 999);
    const user = integer(0, 1) ? 'user:' + secret + '@' : '';
    return { secret, other, url: 'https://' + user + 'h.example/p' + integer(0, 99) + '?a=' + other + '&' + oneOf(names) + '=' + secret + '#f' };
  };
  forAll('shownUrl', generate, ({ secret, other, url }) => {
    const shown = shownUrl(url);
    assert.ok(!shown.includes(secret), shown);
    assert.ok(shown.includes('a=' + other), shown);
  }, 1000);
});
