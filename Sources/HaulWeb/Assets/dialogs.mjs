// The dialogs and fields that change things: Add (also opened by dropping links or a text file of URLs), a new
// session, the session's concurrency and speed limit. Each sends what was typed; a refusal shows the daemon's
// message (addForm.mjs says what the page checks itself).

import { LoggedOut, rpc } from './api.mjs';
import { buildAdds, typedNumber, urlsInText } from './addForm.mjs';
import { formatRateInput, formatSpeed, parseRate } from './format.mjs';
import { addListed, effects } from './model.mjs';
import { $, app, reportError, toast } from './page.mjs';

const ADD_CHUNK = 1000;          // tasks per tasks.add call
const MAX_DROPPED_FILE = 16 * 1024 * 1024;

/** Opens the Add dialog, with `urls` appended to those it holds. */
export function openAddDialog(urls) {
  const dialog = $('add-dialog');
  if (urls && urls.length) {
    const current = $('add-urls').value.trim();
    $('add-urls').value = (current ? current + '\n' : '') + urls.join('\n');
  }
  $('add-error').textContent = '';
  if (!dialog.open) dialog.showModal();
  $('add-urls').focus();
}

function addFields() {
  const fields = {};
  for (const name of ['urls', 'directory', 'filename', 'checksum', 'headers', 'priority', 'segments', 'rate']) {
    fields[name] = $('add-' + name).value;
  }
  return fields;
}

/** Sends the Add dialog's downloads in chunks; `apply` takes the model's effects, `added` runs once they are in. */
async function submitAdd(event, apply, added) {
  event.preventDefault();
  const error = $('add-error');
  error.textContent = '';
  let adds;
  try { adds = buildAdds(addFields(), app.configuration && app.configuration.defaultDirectory); } catch (err) { error.textContent = err.message; return; }
  const submit = $('add-submit');
  submit.disabled = true;
  try {
    for (let i = 0; i < adds.length; i += ADD_CHUNK) {
      const chunk = adds.slice(i, i + ADD_CHUNK);
      const result = await rpc('tasks.add', { session: app.session, tasks: chunk, reply: chunk.length > 200 ? 'ids' : 'tasks' });
      // The stream may already have told newer news of these tasks (running, progress): keep that.
      apply(addListed(app.model, result && result.tasks, effects()));
    }
    $('add-form').reset();
    $('add-dialog').close();
    toast(adds.length === 1 ? 'Added 1 download' : 'Added ' + adds.length + ' downloads');
    added();
  } catch (err) {
    if (!(err instanceof LoggedOut)) error.textContent = err.message;
  } finally {
    submit.disabled = false;
  }
}

function dropCarriesSomething(event) {
  const types = event.dataTransfer ? Array.from(event.dataTransfer.types) : [];
  return types.includes('Files') || types.includes('text/uri-list') || types.includes('text/plain');
}

async function onDrop(event) {
  event.preventDefault();
  $('drop-hint').hidden = true;
  const data = event.dataTransfer;
  if (!data) return;
  let text = '';
  if (data.files && data.files.length) {
    for (const file of Array.from(data.files)) {
      if (file.size > MAX_DROPPED_FILE) { toast('That file is too large for a list of URLs (over 16 MiB)', true); return; }
      text += (await file.text()) + '\n';
    }
  } else {
    text = data.getData('text/uri-list') || data.getData('text/plain') || '';
  }
  const urls = urlsInText(text);
  if (!urls.length) { toast('Nothing to add: the drop held no http(s) URL', true); return; }
  openAddDialog(urls);
}

/** The Add button and dialog, and dropping links or a text file of URLs anywhere on the page. */
export function wireAddDialog(apply, added) {
  $('add-button').addEventListener('click', () => openAddDialog(null));
  $('add-cancel').addEventListener('click', () => $('add-dialog').close());
  $('add-form').addEventListener('submit', (event) => submitAdd(event, apply, added));
  let dragDepth = 0;
  document.addEventListener('dragenter', (event) => {
    if (!dropCarriesSomething(event)) return;
    dragDepth += 1;
    $('drop-hint').hidden = false;
  });
  document.addEventListener('dragleave', () => {
    dragDepth = Math.max(0, dragDepth - 1);
    if (dragDepth === 0) $('drop-hint').hidden = true;
  });
  document.addEventListener('dragover', (event) => {
    if (dropCarriesSomething(event)) event.preventDefault();
  });
  document.addEventListener('drop', (event) => {
    dragDepth = 0;
    onDrop(event);
  });
}

/** The New… button's dialog: `session.open` with the name typed; `opened(name)` switches to it. */
export function wireSessionDialog(opened) {
  $('session-new').addEventListener('click', () => {
    $('session-error').textContent = '';
    $('session-name').value = '';
    $('session-dialog').showModal();
  });
  $('session-cancel').addEventListener('click', () => $('session-dialog').close());
  $('session-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const name = $('session-name').value.trim();
    try {
      await rpc('session.open', { session: name, configuration: {} });
      $('session-dialog').close();
      opened(name);
    } catch (err) {
      if (!(err instanceof LoggedOut)) $('session-error').textContent = err.message;
    }
  });
}

async function applyConcurrency() {
  const count = typedNumber($('session-concurrency').value);
  try {
    await rpc('session.setMaxConcurrentDownloads', { session: app.session, count: count });
    toast('At most ' + count + ' downloads at once');
  } catch (err) { reportError('Could not change the downloads at once', err); }
}

async function applySessionRate() {
  const input = $('session-rate');
  const rate = parseRate(input.value);
  if (Number.isNaN(rate)) {
    toast('Speed limit: give bytes per second like 500K or 2M, or leave it empty for none', true);
    return;
  }
  try {
    await rpc('session.setRateLimit', { session: app.session, bytesPerSecond: rate });
    input.value = formatRateInput(rate);
    toast(rate === null ? 'No speed limit' : 'Speed limit ' + formatSpeed(rate));
  } catch (err) { reportError('Could not change the speed limit', err); }
}

/** The session's Downloads at once and Speed limit fields: each sends its value when changed. */
export function wireSessionSettings() {
  $('session-concurrency').addEventListener('change', applyConcurrency);
  $('session-rate').addEventListener('change', applySessionRate);
}
