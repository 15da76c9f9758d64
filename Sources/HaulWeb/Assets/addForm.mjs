// From what was typed into the Add dialog (or dropped on the page) to the entries of a `tasks.add` call, with the
// page's checks of what was typed. Pure (Tests/web/addForm.test.mjs).

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

/** A header line `Name: value`; throws when it has no name before a colon. */
function header(line) {
  const colon = line.indexOf(':');
  if (colon <= 0) throw new Error('A header line must be "Name: value": ' + line);
  return { name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() };
}

/**
 * The `tasks.add` entries of the dialog's fields (`urls`, `directory`, `filename`, `checksum`, `headers`,
 * `priority`, `segments`, `rate`: the texts typed), given the session's default folder. Throws an Error whose
 * message the dialog shows when the form itself cannot make them.
 */
export function buildAdds(fields, defaultDirectory) {
  const urls = splitUrls(fields.urls || '');
  if (!urls.length) throw new Error('Give at least one URL');
  for (const url of urls) {
    if (!/^(https?):\/\//i.test(url)) throw new Error('Not an http(s) URL: ' + url);
  }
  const directory = String(fields.directory || '').trim();
  const filename = String(fields.filename || '').trim();
  const checksum = String(fields.checksum || '').trim();
  if (directory && !directory.startsWith('/')) throw new Error('The folder must be an absolute path (starting with /)');
  if (filename && urls.length > 1) throw new Error('A file name is for one URL only; give a folder for many');
  if (filename && (filename.includes('/') || filename === '.' || filename === '..')) throw new Error('The file name must not contain /');
  if (checksum && urls.length > 1) throw new Error('A checksum is for one URL only');
  if (checksum && !/^sha256:[0-9a-fA-F]{64}$/.test(checksum)) throw new Error('The checksum must be sha256: followed by 64 hex digits');
  const headers = [];
  for (const raw of String(fields.headers || '').split(/\r?\n/)) {
    const line = raw.trim();
    if (line) headers.push(header(line));
  }
  const priorityText = String(fields.priority || '').trim();
  const priority = priorityText === '' ? 0 : Number(priorityText);
  if (!Number.isInteger(priority)) throw new Error('The priority must be a whole number');
  const segmentsText = String(fields.segments || '').trim();
  const segments = segmentsText === '' ? null : Number(segmentsText);
  if (segments !== null && (!Number.isInteger(segments) || segments < 1 || segments > 32)) throw new Error('Segments must be a whole number from 1 to 32');
  const rate = parseRate(fields.rate || '');
  if (Number.isNaN(rate)) throw new Error('The speed limit must be bytes per second like 500K or 2M');
  let path = null;
  if (filename) {
    const base = directory || defaultDirectory || '';
    if (!base) throw new Error('Give a folder for the file name (this session has no default folder)');
    path = base.replace(/\/+$/, '') + '/' + filename;
  }
  return urls.map((url) => {
    const add = { url: url };
    if (path) add.path = path;
    else if (directory) add.directory = directory;
    if (checksum) add.checksum = checksum.toLowerCase();
    if (headers.length) add.headers = headers;
    if (priority) add.priority = priority;
    if (segments !== null) add.segments = segments;
    if (rate !== null) add.options = { rateLimit: rate };
    return add;
  });
}
