// The Server-Sent Events wire format, read from text as it arrives (the WHATWG HTML standard's "Parsing an event
// stream"). Pure: no DOM, no network; api.mjs feeds it what fetch() reads, since EventSource cannot send the
// session's key header. Unit-tested with `node --test` (Tests/web/eventStream.test.mjs).

/**
 * Reads an event stream chunk by chunk. `push(text)` returns what the text completed, in order: `{retry: ms}` for a
 * `retry:` field, and `{lastEventId, type, data}` for each blank line that ends an event — `data` is undefined when
 * the event had no `data:` line (it still sets `lastEventId`, as a browser's EventSource does).
 */
export class EventStreamParser {
  constructor() {
    this.pending = '';   // the start of a line not yet ended
    this.data = '';
    this.hasData = false;
    this.type = '';
    this.lastEventId = '';
  }

  push(text) {
    const buffer = this.pending + text;
    const out = [];
    const ends = /\r\n|\r|\n/g;
    let start = 0;
    let match;
    while ((match = ends.exec(buffer)) !== null) {
      // A CR at the very end may be the first half of a CRLF split across chunks: wait for the next one.
      if (match[0] === '\r' && match.index === buffer.length - 1) break;
      this.line(buffer.slice(start, match.index), out);
      start = match.index + match[0].length;
    }
    this.pending = buffer.slice(start);
    return out;
  }

  line(line, out) {
    if (line === '') {
      out.push({ lastEventId: this.lastEventId, type: this.type || 'message', data: this.hasData ? this.data.slice(0, -1) : undefined });
      this.data = '';
      this.hasData = false;
      this.type = '';
      return;
    }
    if (line[0] === ':') return; // a comment (`: ready`, `: keepalive`)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value[0] === ' ') value = value.slice(1);
    switch (field) {
      case 'data': this.data += value + '\n'; this.hasData = true; break;
      case 'event': this.type = value; break;
      case 'id': if (!value.includes('\0')) this.lastEventId = value; break;
      case 'retry': if (/^[0-9]+$/.test(value)) out.push({ retry: Number(value) }); break;
      default: break; // unknown fields are ignored
    }
  }
}

/** The key the login redirect put in the address's fragment (`#key=…`), or null. */
export function keyFromHash(hash) {
  if (typeof hash !== 'string') return null;
  const match = /^#key=([0-9a-f]{64})$/.exec(hash);
  return match ? match[1] : null;
}
