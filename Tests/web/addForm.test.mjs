// From the Add dialog's fields to tasks.add (Sources/HaulWeb/Assets/addForm.mjs).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { buildAdds, splitUrls, urlsInText } from '../../Sources/HaulWeb/Assets/addForm.mjs';

function error(fields, defaultDirectory) {
  try {
    buildAdds(fields, defaultDirectory);
  } catch (err) {
    return err.message;
  }
  return null;
}

test('URL lines: blank lines and # comments are skipped, the rest trimmed', () => {
  assert.deepEqual(splitUrls('  http://a/x \r\n\n# a comment\nhttps://b/y\n   \n'), ['http://a/x', 'https://b/y']);
  assert.deepEqual(urlsInText('see http://a/x\nHTTPS://b/y\nftp://c/z\nhttp://d/w'), ['HTTPS://b/y', 'http://d/w']);
});

test('a checksum\'s digits are sent in lower case, segments and priority as numbers', () => {
  const [add] = buildAdds({ urls: 'http://h/a', checksum: 'sha256:' + 'AB'.repeat(32), segments: ' 32 ', priority: '-2' });
  assert.deepEqual(add, { url: 'http://h/a', checksum: 'sha256:' + 'ab'.repeat(32), segments: 32, priority: -2 });
});

test('a plain add is the URL alone; defaults are left out', () => {
  assert.deepEqual(buildAdds({ urls: 'http://h/a\nhttp://h/b', priority: '0', segments: '', rate: '' }),
    [{ url: 'http://h/a' }, { url: 'http://h/b' }]);
});

test('a file name is joined to the folder, or the session\'s default one', () => {
  assert.deepEqual(buildAdds({ urls: 'http://h/a', directory: '/dl/', filename: 'x.iso' }), [{ url: 'http://h/a', path: '/dl/x.iso' }]);
  assert.deepEqual(buildAdds({ urls: 'http://h/a', filename: 'x.iso' }, '/home/me/Downloads'),
    [{ url: 'http://h/a', path: '/home/me/Downloads/x.iso' }]);
  assert.match(error({ urls: 'http://h/a', filename: 'x.iso' }, ''), /Give a folder/);
});

test('headers are Name: value lines; rates are read like 2M', () => {
  const [add] = buildAdds({ urls: 'http://h/a', headers: 'Referer: http://x/\n\n X-Token:  a:b \r\n', rate: '2M' });
  assert.deepEqual(add.headers, [{ name: 'Referer', value: 'http://x/' }, { name: 'X-Token', value: 'a:b' }]);
  assert.deepEqual(add.options, { rateLimit: 2 * 1024 * 1024 });
});

test('what the form refuses, each with one line saying what to do', () => {
  const cases = [
    [{ urls: '  \n# only a comment' }, /at least one URL/],
    [{ urls: 'http://h/a\nhttp://h/b', filename: 'x' }, /one URL only/],
    [{ urls: 'http://h/a\nhttp://h/b', checksum: 'sha256:00' }, /one URL only/],
    [{ urls: 'http://h/a', directory: '/dl', filename: 'sub/x' }, /must not contain \//],
    [{ urls: 'http://h/a', directory: '/dl', filename: '..' }, /must not contain \//],
    [{ urls: 'http://h/a', headers: 'no colon here' }, /"Name: value"/],
    [{ urls: 'http://h/a', headers: ': value' }, /"Name: value"/],
    [{ urls: 'http://h/a', rate: 'fast' }, /like 500K or 2M/],
    [{ urls: 'ftp://h/a' }, /Not an http\(s\) URL: ftp:\/\/h\/a/],
    [{ urls: 'http://h/a', directory: 'relative' }, /absolute path/],
    [{ urls: 'http://h/a', checksum: 'md5:d41d8cd98f00b204e9800998ecf8427e' }, /sha256: followed by 64 hex digits/],
    [{ urls: 'http://h/a', segments: '33' }, /from 1 to 32/],
    [{ urls: 'http://h/a', segments: '0' }, /from 1 to 32/],
    [{ urls: 'http://h/a', priority: '1.5' }, /whole number/],
  ];
  for (const [fields, message] of cases) {
    const text = error(fields, '/dl');
    assert.match(String(text), message, JSON.stringify(fields));
    assert.equal(text.includes('\n'), false);
  }
});

