// From the Add dialog's fields to tasks.add (Sources/HaulWeb/Assets/addForm.mjs): the page sends what was typed and
// leaves the values to the daemon; it checks only what its own form adds.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { buildAdds, splitUrls, typedNumber, typedUrl, urlsInText } from '../../Sources/HaulWeb/Assets/addForm.mjs';
import { forAll, integer, oneOf } from './random.mjs';

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

test('what the daemon checks is sent as typed: any checksum, any segments, any URL, any folder, any priority', () => {
  const [add] = buildAdds({
    urls: 'ftp://host/file', directory: 'relative/folder', checksum: 'md5:D41D8CD98F00B204E9800998ECF8427E',
    segments: '100', priority: '1.5', headers: '', rate: '',
  });
  assert.deepEqual(add, {
    url: 'ftp://host/file', directory: 'relative/folder', checksum: 'md5:D41D8CD98F00B204E9800998ECF8427E', segments: 100,
    priority: 1.5,
  });
  const [words] = buildAdds({ urls: 'http://h/f', segments: 'lots', priority: 'high', checksum: 'crc32:zz' });
  assert.equal(words.segments, 'lots');
  assert.equal(words.priority, 'high');
  assert.equal(words.checksum, 'crc32:zz');
});

test('a URL typed without a scheme is http://, as curl, wget and haul get take it; anything else is sent as typed', () => {
  for (const [text, sent] of [
    ['example.com/file', 'http://example.com/file'], ['127.0.0.1:8080/x', 'http://127.0.0.1:8080/x'],
    ['localhost:8080', 'http://localhost:8080'], ['[::1]:8080/y', 'http://[::1]:8080/y'], ['  host/z  ', 'http://host/z'],
    ['https://h/f', 'https://h/f'], ['HTTP://h/f', 'HTTP://h/f'], ['ftp://h/f', 'ftp://h/f'], ['svn+ssh://h/f', 'svn+ssh://h/f'],
    ['/etc/passwd', '/etc/passwd'], ['./list.txt', './list.txt'], ['~/x', '~/x'], ['-v', '-v'], ['a b', 'a b'],
  ]) {
    assert.equal(typedUrl(text), sent, text);
    assert.equal(buildAdds({ urls: text })[0].url, sent, text);
  }
});

test('numbers are sent as numbers when they are written as one, else as the text typed', () => {
  for (const [text, value] of [['', null], ['  ', null], ['4', 4], [' 64 ', 64], ['-3', -3], ['+2', 2], ['2.5', 2.5], ['1e3', 1000],
    ['0', 0], ['abc', 'abc'], ['4 segments', '4 segments'], ['0x10', '0x10'], ['Infinity', 'Infinity']]) {
    assert.equal(typedNumber(text), value, JSON.stringify(text));
  }
  forAll('whole numbers', () => integer(-1e12, 1e12), (n) => assert.equal(typedNumber(String(n)), n));
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

test('the form refuses only what it adds itself, each with one line saying what to do', () => {
  const cases = [
    [{ urls: '  \n# only a comment' }, /at least one URL/],
    [{ urls: 'http://h/a\nhttp://h/b', filename: 'x' }, /one URL only/],
    [{ urls: 'http://h/a\nhttp://h/b', checksum: 'sha256:00' }, /one URL only/],
    [{ urls: 'http://h/a', directory: '/dl', filename: 'sub/x' }, /must not contain \//],
    [{ urls: 'http://h/a', directory: '/dl', filename: '..' }, /must not contain \//],
    [{ urls: 'http://h/a', headers: 'no colon here' }, /"Name: value"/],
    [{ urls: 'http://h/a', headers: ': value' }, /"Name: value"/],
    [{ urls: 'http://h/a', rate: 'fast' }, /like 500K or 2M/],
  ];
  for (const [fields, message] of cases) {
    const text = error(fields, '/dl');
    assert.match(String(text), message, JSON.stringify(fields));
    assert.equal(text.includes('\n'), false);
  }
});

test('any single URL with any values typed makes one entry carrying each value the daemon is to judge', () => {
  const words = ['', '0', '7', '65', '-1', '1.5', 'x', 'sha256:ab', 'md5:0', ' spaced '];
  forAll('forms', () => ({
    urls: oneOf(['http://h/a', 'https://h/b?c=d', 'ftp://h/c', 'h/no-scheme', 'http://']),
    directory: oneOf(['', '/abs', 'rel']), checksum: oneOf(words), segments: oneOf(words), priority: oneOf(words),
  }), (fields) => {
    const adds = buildAdds(fields);
    assert.equal(adds.length, 1);
    const [add] = adds;
    assert.equal(add.url, typedUrl(fields.urls));
    assert.equal(add.directory, fields.directory || undefined);
    assert.equal(add.checksum, fields.checksum.trim() || undefined);
    assert.equal(add.segments, fields.segments.trim() === '' ? undefined : typedNumber(fields.segments));
    const priority = typedNumber(fields.priority);
    assert.equal(add.priority, priority === null || priority === 0 ? undefined : priority);
  });
});
