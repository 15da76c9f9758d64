// From what was typed into the Add dialog (or dropped on the page) to the entries of a `tasks.add` call. Pure
// (Tests/web/addForm.test.mjs).
//
// The values are the daemon's to check, and its message is the one the dialog shows: a URL's scheme, a folder that
// is not absolute, a checksum's algorithm and digits, the number of segments, a priority that is not a whole
// number — the page sends them as typed. It checks only what its own form adds to the protocol: a file name, joined
// to the folder, is a name (no `/`) for one URL; a checksum is for one URL; a header line is `Name: value`; a speed
// limit is written like `2M` (the protocol takes bytes per second).

import { parseRate } from './format.mjs';

/** The lines of `text` that are not empty or comments (`#`), trimmed. */
export function splitUrls(text) {
  const urls = [];
  for (const raw of String(text).split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    urls.push(line);
  }
  return urls;
}

/** The http(s) URLs of dropped text (a text file of URLs, a link): one a line, the rest of the text ignored. */
export function urlsInText(text) {
  return splitUrls(text).filter((line) => /^https?:\/\//i.test(line));
}

/**
 * A number field's value as typed: null when empty, a number when it is written as one, else the text itself
 * (the daemon then says what it expects).
 */
export function typedNumber(text) {
  const t = String(text).trim();
  if (t === '') return null;
  return /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t) ? Number(t) : t;
}

/** A header line `Name: value`; throws when it has no name before a colon. */
function header(line) {
  const colon = line.indexOf(':');
  if (colon <= 0) throw new Error('A header line must be "Name: value": ' + line);
  return { name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() };
}

/**
 * A URL as a person types it: one without a scheme is `http://`, as curl, wget and `haul get` take `example.com/file`
 * and `127.0.0.1:8080/x` (a scheme is letters, digits, `+`, `-`, `.` before `:/`, so `localhost:8080` is a host and
 * port). Anything else is left for the daemon to judge, and its message is the one shown.
 */
export function typedUrl(text) {
  const trimmed = String(text).trim();
  if (!trimmed || /^[a-z][a-z0-9+.-]*:\//i.test(trimmed) || /^[/.~-]/.test(trimmed) || /\s/.test(trimmed)) return trimmed;
  return 'http://' + trimmed;
}

/**
 * The `tasks.add` entries of the dialog's fields (`urls`, `directory`, `filename`, `checksum`, `headers`,
 * `priority`, `segments`, `rate`: the texts typed), given the session's default folder. Throws an Error whose
 * message the dialog shows when the form itself cannot make them.
 */
export function buildAdds(fields, defaultDirectory) {
  const urls = splitUrls(fields.urls || '');
  if (!urls.length) throw new Error('Give at least one URL');
  const directory = String(fields.directory || '').trim();
  const filename = String(fields.filename || '').trim();
  const checksum = String(fields.checksum || '').trim();
  if (filename && urls.length > 1) throw new Error('A file name is for one URL only; give a folder for many');
  if (filename && (filename.includes('/') || filename === '.' || filename === '..')) throw new Error('The file name must not contain /');
  if (checksum && urls.length > 1) throw new Error('A checksum is for one URL only');
  const headers = [];
  for (const raw of String(fields.headers || '').split(/\r?\n/)) {
    const line = raw.trim();
    if (line) headers.push(header(line));
  }
  const priority = typedNumber(fields.priority || '');
  const segments = typedNumber(fields.segments || '');
  const rate = parseRate(fields.rate || '');
  if (Number.isNaN(rate)) throw new Error('The speed limit must be bytes per second like 500K or 2M');
  let path = null;
  if (filename) {
    const base = directory || defaultDirectory || '';
    if (!base) throw new Error('Give a folder for the file name (this session has no default folder)');
    path = base.replace(/\/+$/, '') + '/' + filename;
  }
  return urls.map((url) => {
    const add = { url: typedUrl(url) };
    if (path) add.path = path;
    else if (directory) add.directory = directory;
    if (checksum) add.checksum = checksum;
    if (headers.length) add.headers = headers;
    if (priority !== null && priority !== 0) add.priority = priority;
    if (segments !== null) add.segments = segments;
    if (rate !== null) add.options = { rateLimit: rate };
    return add;
  });
}
