// What the page writes for numbers and names: bytes, speeds, durations, rates, a task's name and progress.
// Pure: no DOM, no clock, no network (Tests/web/format.test.mjs).

/** `n` bytes as `512 B`, `1.5 KiB`, `3.0 MiB` … (1024-based); `?` when unknown. */
export function formatBytes(n) {
  if (n === null || n === undefined || !isFinite(n)) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return unit === 0 ? Math.round(n) + ' B' : value.toFixed(1) + ' ' + units[unit];
}

/** Bytes per second as `1.0 MiB/s`; `—` when nothing moves. */
export function formatSpeed(bps) {
  if (!bps || bps <= 0) return '—';
  return formatBytes(bps) + '/s';
}

/** Seconds as `42 s`, `3 min 5 s`, `2 h 10 min`, `1 d 4 h`; `—` when unknown. */
export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds) || seconds < 0) return '—';
  const s = Math.round(seconds);
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
}

/**
 * Bytes per second from the notation `haul --limit-rate` reads: `500K`, `2M`, `1.5G`, `1T`, `65536`, with an
 * optional `B`/`iB` and `/s` (K = 1024, any case). null for empty; NaN when it is not that notation. Whether the
 * number is allowed (at least 1) is the daemon's to say: its message is the one shown.
 */
export function parseRate(text) {
  const t = String(text).trim().toLowerCase();
  if (t === '') return null;
  const m = /^(\d+\.?\d*|\.\d+)([kmgt]?)(?:i?b)?(?:\/s)?$/.exec(t);
  if (!m) return NaN;
  const power = { '': 0, k: 1, m: 2, g: 3, t: 4 }[m[2]];
  return Math.round(parseFloat(m[1]) * Math.pow(1024, power));
}

/** A rate as the speed-limit fields show it: `2M`, `500K`, or the bytes; empty for none. */
export function formatRateInput(bps) {
  if (bps === null || bps === undefined) return '';
  if (bps % (1024 * 1024) === 0) return (bps / (1024 * 1024)) + 'M';
  if (bps % 1024 === 0) return (bps / 1024) + 'K';
  return String(bps);
}

/** The last non-empty part of a `/`-separated path; empty when there is none. */
export function lastPathPart(s) {
  const parts = String(s).split('/').filter((p) => p !== '');
  return parts.length ? parts[parts.length - 1] : '';
}

/** The name shown for a task: its file name, else the URL's last path part (decoded), else the URL's host. */
export function taskName(task) {
  if (task.path) {
    const name = lastPathPart(task.path);
    if (name) return name;
  }
  try {
    const url = new URL(task.url);
    let name = lastPathPart(url.pathname);
    try { name = decodeURIComponent(name); } catch (e) { /* keep it encoded */ }
    return name || url.host || shownUrl(task.url);
  } catch (e) {
    return task.url ? shownUrl(task.url) : task.id;
  }
}

/** Query parameters (lower-cased) whose values are credentials, as the daemon's Redaction names them: signed URLs'
 * signature, credential and session token (S3, Google, Azure's `sig`, CloudFront's `Signature`) and tokens. */
const SECRET_PARAMETERS = new Set([
  'x-amz-signature', 'x-amz-credential', 'x-amz-security-token', 'x-goog-signature', 'x-goog-credential',
  'sig', 'token', 'access_token', 'signature',
]);

/** A URL as the page shows it: its `user:password@` and the values of secret query parameters as `***` (the CLI
 * shows URLs the same way; the request keeps the real URL). */
export function shownUrl(text) {
  let url = String(text || '');
  const scheme = url.indexOf('://');
  if (scheme >= 0) {
    const start = scheme + 3;
    let end = url.slice(start).search(/[/?#]/);
    end = end < 0 ? url.length : start + end;
    const at = url.lastIndexOf('@', end - 1);
    if (at >= start) url = url.slice(0, start) + '***@' + url.slice(at + 1);
  }
  return url.replace(/([?&#;])([^=&#?;]{1,32})=([^&#;]*)/g, (whole, lead, name, value) => {
    let decoded = name;
    try { decoded = decodeURIComponent(name); } catch (e) { /* keep it */ }
    return SECRET_PARAMETERS.has(decoded.toLowerCase()) && value !== '' ? lead + name + '=***' : whole;
  });
}

/** A message without the URL it starts with, where the row names the task already ("… answered 404"). */
export function withoutUrl(message, url) {
  const text = String(message || '');
  if (!url || !text.startsWith(url)) return text;
  const rest = text.slice(url.length).replace(/^[\s:]+/, '');
  return rest || text;
}

/** Seconds left of a running task: the daemon's estimate, else from its speed; null when there is none. */
export function etaOf(task) {
  if (task.state !== 'running') return null;
  if (typeof task.secondsRemaining === 'number') return task.secondsRemaining;
  const bps = task.bytesPerSecond;
  if (bps && bps > 0 && typeof task.total === 'number') return Math.max(0, (task.total - task.bytes) / bps);
  return null;
}

/**
 * A task's progress bar: `value` in thousandths (null: indeterminate) and the percent shown (empty when
 * unknown). A finished task of unknown size is full.
 */
export function progressOf(task) {
  const total = typeof task.total === 'number' ? task.total : null;
  const bytes = task.bytes || 0;
  if (total && total > 0) {
    return { value: Math.min(1000, Math.floor((bytes / total) * 1000)), percent: Math.floor((bytes / total) * 100) + '%' };
  }
  if (task.state === 'finished') return { value: 1000, percent: '100%' };
  return { value: null, percent: '' };
}

/** A row's bytes: `1.0 MiB / 3.0 MiB`, or the bytes alone when the size is unknown. */
export function bytesOf(task) {
  const bytes = task.bytes || 0;
  return typeof task.total === 'number' ? formatBytes(bytes) + ' / ' + formatBytes(task.total) : formatBytes(bytes);
}
