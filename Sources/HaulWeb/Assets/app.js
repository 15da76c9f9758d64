// Haul's dashboard: plain JavaScript, no framework, no build step. Strict-CSP safe: no inline script, no eval,
// the DOM is built with createElement/textContent (never innerHTML with data). Live updates come only from the
// server-sent event stream; list changes are drawn at most once per animation frame.
'use strict';

(function () {
  performance.mark('haul-start');

  // ------------------------------------------------------------------ constants
  const NARROW = window.matchMedia('(max-width: 980px)'); // the details open over the list (app.css)
  const OVERSCAN = 8;             // rows drawn above and below the visible ones
  const FIRST_PAGE_LIMIT = 200;   // tasks.list page that draws the first screen
  const PAGE_LIMIT = 2000;        // tasks.list page size while loading in the background
  const ADD_CHUNK = 1000;         // tasks per tasks.add call
  const GRAPH_SECONDS = 300;      // the speed graph shows the last 5 minutes
  const STATES = ['waiting', 'running', 'paused', 'finished', 'failed', 'cancelled'];

  // ------------------------------------------------------------------ state
  const app = {
    csrf: '',
    sessions: [],
    session: '',
    version: '',
    tasks: new Map(),        // id -> task (protocol Task object, kept up to date by events)
    order: [],               // ids in the order added
    view: [],                // ids shown (after filter and search), in order
    viewIndex: new Map(),    // id -> index in view
    selected: new Set(),
    anchor: null,            // id of the last plain or ctrl click, for shift-click ranges
    focused: null,           // id shown in the detail panel
    filter: '',
    search: '',
    source: null,            // EventSource
    loadGeneration: 0,       // bumps on session switch and reset: stale pages are dropped
    loaded: false,
    speeds: new Map(),       // id -> bytesPerSecond of running tasks
    history: new Float64Array(GRAPH_SECONDS),
    historyHead: 0,
    segments: null,          // {id, total, done, active} of the focused task
    segmentsFromStream: false,
    pruneSelection: false,
    dirtyView: true,
    dirtyRows: true,
    dirtyDetail: true,
    dirtyStatus: true,
    frameRequested: false,
    loggedOut: false,
    interactiveMarked: false,
    eventCount: 0,
    rowHeight: 52,           // px: the list's --row-height (app.css; taller where rows are cards)
  };

  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------------ formatting
  function formatBytes(n) {
    if (n === null || n === undefined || !isFinite(n)) return '?';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let value = n;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    return unit === 0 ? Math.round(n) + ' B' : value.toFixed(1) + ' ' + units[unit];
  }

  function formatSpeed(bps) {
    if (!bps || bps <= 0) return '—';
    return formatBytes(bps) + '/s';
  }

  function formatDuration(seconds) {
    if (seconds === null || seconds === undefined || !isFinite(seconds) || seconds < 0) return '—';
    const s = Math.round(seconds);
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
    return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
  }

  /** Bytes per second from "500K", "2M", "1.5G", "65536" (K/M/G 1024-based); null for empty; NaN when invalid. */
  function parseRate(text) {
    const t = text.trim();
    if (t === '') return null;
    const m = /^(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:i?B)?(?:\/s)?$/.exec(t);
    if (!m) return NaN;
    const mult = { '': 1, k: 1024, m: 1024 * 1024, g: 1024 * 1024 * 1024 }[m[2].toLowerCase()];
    const value = Math.round(parseFloat(m[1]) * mult);
    return value >= 1 ? value : NaN;
  }

  function formatRateInput(bps) {
    if (bps === null || bps === undefined) return '';
    if (bps % (1024 * 1024) === 0) return (bps / (1024 * 1024)) + 'M';
    if (bps % 1024 === 0) return (bps / 1024) + 'K';
    return String(bps);
  }

  function lastPathPart(s) {
    const parts = s.split('/').filter((p) => p !== '');
    return parts.length ? parts[parts.length - 1] : '';
  }

  /** The name shown for a task: its file name, else the URL's last path part, else the URL's host. */
  function taskName(task) {
    if (task.path) {
      const name = lastPathPart(task.path);
      if (name) return name;
    }
    try {
      const url = new URL(task.url);
      let name = lastPathPart(url.pathname);
      try { name = decodeURIComponent(name); } catch (e) { /* keep it encoded */ }
      return name || url.host || task.url;
    } catch (e) {
      return task.url || task.id;
    }
  }

  /** A message without the URL it starts with, where the row names the task already ("… answered 404"). */
  function withoutUrl(message, url) {
    const text = String(message || '');
    if (!url || !text.startsWith(url)) return text;
    const rest = text.slice(url.length).replace(/^[\s:]+/, '');
    return rest || text;
  }

  function etaOf(task) {
    if (task.state !== 'running') return null;
    if (typeof task.secondsRemaining === 'number') return task.secondsRemaining;
    const bps = task.bytesPerSecond;
    if (bps && bps > 0 && typeof task.total === 'number') return Math.max(0, (task.total - task.bytes) / bps);
    return null;
  }

  // ------------------------------------------------------------------ server calls
  class LoggedOut extends Error {}

  function showLoggedOut() {
    if (app.loggedOut) return;
    app.loggedOut = true;
    if (app.source) { app.source.close(); app.source = null; }
    $('app').remove();
    for (const d of document.querySelectorAll('dialog')) d.remove();
    $('loading').hidden = true;
    $('login-required').hidden = false;
  }

  /** Calls one RPC method through the bridge; resolves with its result, rejects with an Error carrying its message. */
  async function rpc(method, params) {
    const response = await fetch('/api/rpc', {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': app.csrf },
      body: JSON.stringify({ method: method, params: params || {} }),
    });
    if (response.status === 401) { showLoggedOut(); throw new LoggedOut('not logged in'); }
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    if (!response.ok) {
      const message = body && (typeof body.error === 'string' ? body.error : body.error && body.error.message);
      throw new Error(message || ('the server answered ' + response.status));
    }
    if (body && body.error) {
      const err = new Error(body.error.message || 'the daemon refused the request');
      err.data = body.error.data;
      throw err;
    }
    return body ? body.result : null;
  }

  let toastTimer = 0;
  function toast(message, isError) {
    const el = $('toast');
    el.textContent = message;
    el.classList.toggle('error', !!isError);
    el.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { el.hidden = true; }, isError ? 8000 : 3000);
  }

  function isNoSuchSession(err) {
    return !!(err && err.data && err.data.reason === 'noSuchSession');
  }

  function reportError(what, err) {
    if (err instanceof LoggedOut) return;
    toast(what + ': ' + (err && err.message ? err.message : String(err)), true);
  }

  // ------------------------------------------------------------------ task bookkeeping
  function upsertTask(task) {
    const existing = app.tasks.get(task.id);
    if (existing) {
      Object.assign(existing, task);
      if (task.secondsRemaining === undefined) delete existing.secondsRemaining;
    } else {
      app.tasks.set(task.id, Object.assign({}, task));
      app.order.push(task.id);
    }
    trackSpeed(app.tasks.get(task.id));
    app.dirtyView = true;
    if (task.id === app.focused) app.dirtyDetail = true;
  }

  function trackSpeed(task) {
    if (task.state === 'running' && task.bytesPerSecond > 0) app.speeds.set(task.id, task.bytesPerSecond);
    else app.speeds.delete(task.id);
  }

  function forgetTasks(ids) {
    const gone = new Set(ids);
    for (const id of gone) {
      app.tasks.delete(id);
      app.selected.delete(id);
      app.speeds.delete(id);
    }
    app.order = app.order.filter((id) => !gone.has(id));
    if (app.focused && gone.has(app.focused)) setFocus(null);
    app.dirtyView = true;
    schedule();
  }

  function applyEvent(event) {
    switch (event.type) {
      case 'added':
        if (event.task) upsertTask(event.task);
        break;
      case 'stateChanged': {
        const task = app.tasks.get(event.id);
        if (!task) break;
        task.state = event.to;
        if (event.to !== 'running') { task.bytesPerSecond = null; delete task.secondsRemaining; }
        trackSpeed(task);
        app.dirtyView = true;
        if (event.id === app.focused) {
          app.dirtyDetail = true;
          if (event.to !== 'running') {
            // Nothing is being fetched any more: the daemon's map says where the bytes stopped.
            app.segmentsFromStream = false;
            drawSegments();
            loadSegments(event.id);
          }
        }
        break;
      }
      case 'progress': {
        const task = app.tasks.get(event.id);
        if (!task) break;
        task.bytes = event.bytes;
        if (event.total !== undefined) task.total = event.total;
        task.bytesPerSecond = event.bytesPerSecond;
        task.secondsRemaining = event.secondsRemaining;
        if (task.note) task.note = null;
        trackSpeed(task);
        app.dirtyRows = true;
        if (event.id === app.focused) {
          app.dirtyDetail = true;
          // A single-connection download gets no segments events: its map is one range from 0.
          if (app.segments && app.segments.id === event.id && !app.segmentsFromStream && event.bytes > 0) {
            app.segments.done = [[0, event.bytes]];
            app.segments.total = task.total;
            const total = typeof task.total === 'number' ? task.total : null;
            app.segments.active = total !== null && total > event.bytes ? [[event.bytes, total]] : [];
            drawSegments();
          }
        }
        break;
      }
      case 'finished':
      case 'failed':
        if (event.task) {
          upsertTask(event.task);
          if (event.task.id === app.focused) {
            // Its end: the daemon's map now says where every byte is; no stream reading follows.
            app.segmentsFromStream = false;
            loadSegments(event.task.id);
          }
        }
        break;
      case 'segments':
        if (event.id === app.focused) {
          app.segments = { id: event.id, total: event.total, done: event.done || [], active: event.active || [] };
          app.segmentsFromStream = true;
          drawSegments();
        }
        break;
      case 'reset':
        reloadTasks();
        break;
      default:
        break; // allFinished and anything newer: nothing to draw
    }
    schedule();
  }

  // ------------------------------------------------------------------ loading
  async function loadTasks() {
    const generation = ++app.loadGeneration;
    app.loaded = false;
    $('task-list').dataset.loaded = 'false';
    $('status-loading').textContent = 'loading tasks…';
    let cursor = null;
    let first = true;
    try {
      for (;;) {
        // A small first page draws the first screen soon; the rest comes in pages of PAGE_LIMIT behind it.
        const params = { session: app.session, limit: first ? FIRST_PAGE_LIMIT : PAGE_LIMIT };
        if (cursor) params.cursor = cursor;
        const page = await rpc('tasks.list', params);
        if (generation !== app.loadGeneration) return;
        for (const task of page.tasks || []) {
          // An event may already have brought a newer copy of this task: keep that one.
          if (!app.tasks.has(task.id)) upsertTask(task);
        }
        app.dirtyView = true;
        if (first) { first = false; schedule(); }
        cursor = page.next;
        if (!cursor) break;
        $('status-loading').textContent = 'loading tasks… ' + app.tasks.size;
        await new Promise((resolve) => setTimeout(resolve, 0)); // let the page draw and answer between pages
      }
      app.loaded = true;
      $('status-loading').textContent = '';
      $('task-list').dataset.loaded = 'true';
      if (!performance.getEntriesByName('haul-loaded').length) performance.mark('haul-loaded');
      schedule();
    } catch (err) {
      if (generation !== app.loadGeneration) return;
      $('status-loading').textContent = '';
      if (isNoSuchSession(err)) {
        // A session nobody has added to yet: empty until its first task (the stream tells).
        app.loaded = true;
        $('task-list').dataset.loaded = 'true';
        app.dirtyView = true;
        schedule();
      } else {
        reportError('Could not list the tasks', err);
      }
    }
  }

  function clearTasks() {
    app.tasks.clear();
    app.order = [];
    app.selected.clear();
    app.speeds.clear();
    app.anchor = null;
    app.dirtyView = true;
  }

  function reloadTasks() {
    const focused = app.focused;
    clearTasks();
    loadTasks().then(() => { if (focused && app.tasks.has(focused)) setFocus(focused); });
  }

  function openStream() {
    if (app.source) app.source.close();
    const live = $('live');
    live.dataset.live = 'connecting';
    live.textContent = 'connecting';
    const source = new EventSource('/api/events?session=' + encodeURIComponent(app.session));
    app.source = source;
    source.onopen = () => {
      if (app.source !== source) return;
      live.dataset.live = 'live';
      live.textContent = 'live';
    };
    source.onerror = () => {
      if (app.source !== source) return;
      // EventSource reconnects by itself with Last-Event-ID; it gives up only when the server refuses it.
      if (source.readyState === EventSource.CLOSED) {
        live.dataset.live = 'offline';
        live.textContent = 'offline';
        checkLogin();
      } else {
        live.dataset.live = 'connecting';
        live.textContent = 'reconnecting';
      }
    };
    source.onmessage = (message) => {
      if (app.source !== source) return;
      let event;
      try { event = JSON.parse(message.data); } catch (e) { return; }
      if (event && typeof event.type === 'string') { app.eventCount += 1; applyEvent(event); }
    };
  }

  async function checkLogin() {
    try {
      const response = await fetch('/api/me', { credentials: 'same-origin', cache: 'no-store' });
      if (response.status === 401) showLoggedOut();
    } catch (e) { /* the daemon is away; the stream shows it */ }
  }

  async function loadConfiguration() {
    try {
      const config = await rpc('session.configuration', { session: app.session });
      app.configuration = config || {};
      const concurrency = $('session-concurrency');
      if (typeof app.configuration.maxConcurrentDownloads === 'number') concurrency.value = app.configuration.maxConcurrentDownloads;
      else concurrency.value = '';
      $('session-rate').value = formatRateInput(app.configuration.rateLimit);
      $('add-directory').placeholder = app.configuration.defaultDirectory || "session's default";
    } catch (err) {
      app.configuration = {};
      if (!isNoSuchSession(err)) reportError('Could not read the session settings', err);
    }
  }

  function fillSessions() {
    const select = $('session-select');
    select.replaceChildren();
    const names = app.sessions.slice();
    if (!names.includes(app.session)) names.push(app.session);
    names.sort();
    for (const name of names) {
      const option = document.createElement('option');
      option.value = name;
      option.textContent = name;
      option.selected = name === app.session;
      select.appendChild(option);
    }
  }

  async function switchSession(name) {
    app.session = name;
    try { localStorage.setItem('haul.session', name); } catch (e) { /* private mode */ }
    fillSessions();
    setFocus(null);
    clearTasks();
    app.history.fill(0);
    openStream();
    loadConfiguration();
    await loadTasks();
  }

  // ------------------------------------------------------------------ the view (filter, search, virtual list)
  function matches(task) {
    if (app.filter === 'active') { if (task.state !== 'running' && task.state !== 'waiting') return false; }
    else if (app.filter && task.state !== app.filter) return false;
    if (app.search) {
      const needle = app.search;
      if (taskName(task).toLowerCase().indexOf(needle) < 0 && String(task.url).toLowerCase().indexOf(needle) < 0) return false;
    }
    return true;
  }

  function rebuildView() {
    const view = [];
    const index = new Map();
    for (const id of app.order) {
      const task = app.tasks.get(id);
      if (task && matches(task)) { index.set(id, view.length); view.push(id); }
    }
    app.view = view;
    app.viewIndex = index;
    if (app.pruneSelection) {
      // A new filter or search: what it hides is no longer selected (actions act on what is shown).
      app.pruneSelection = false;
      for (const id of Array.from(app.selected)) if (!index.has(id)) app.selected.delete(id);
    }
    $('task-list-inner').style.height = (view.length * app.rowHeight) + 'px';
    const list = $('task-list');
    list.dataset.count = String(view.length);
    $('list-empty').hidden = !(app.loaded && view.length === 0);
    app.dirtyRows = true;
    app.dirtyStatus = true;
  }

  const rowPool = [];     // row elements, reused
  let rowsShown = 0;

  /** Reads the rows' height from the stylesheet (cards on phones are taller); a change redraws the list. */
  function measureRowHeight() {
    const value = parseFloat(getComputedStyle($('task-list')).getPropertyValue('--row-height'));
    const height = value > 0 ? value : 52;
    if (height !== app.rowHeight) {
      app.rowHeight = height;
      app.dirtyView = true;
      app.dirtyRows = true;
      schedule();
    }
  }

  /** A new element of `tag` with `className` (the rows' cells). */
  function element(tag, className) {
    const node = document.createElement(tag);
    node.className = className;
    return node;
  }

  function makeRow() {
    const row = element('div', 'row');
    row.setAttribute('role', 'listitem');
    const checkCell = element('span', 'col-check');
    const check = element('input', 'row-check');
    check.type = 'checkbox';
    checkCell.appendChild(check);
    const nameCell = element('span', 'col-name');
    const name = element('span', 'name');
    const sub = element('span', 'sub');
    nameCell.append(name, sub);
    const progressCell = element('span', 'col-progress');
    const progress = element('progress', 'progress');
    progress.max = 1000;
    const percent = element('span', 'percent');
    progressCell.append(progress, percent);
    const bytes = element('span', 'col-bytes');
    const speed = element('span', 'col-speed');
    const eta = element('span', 'col-eta');
    const stateCell = element('span', 'col-state');
    const state = element('span', 'badge');
    stateCell.appendChild(state);
    row.append(checkCell, nameCell, progressCell, bytes, speed, eta, stateCell);
    row._parts = { check, name, sub, progress, percent, bytes, speed, eta, state };
    row._key = '';
    return row;
  }

  function fillRow(row, task, index) {
    const p = row._parts;
    row.style.transform = 'translateY(' + (index * app.rowHeight) + 'px)';
    row.dataset.taskId = task.id;
    row.dataset.index = String(index);
    row.dataset.state = task.state;
    row.dataset.bytes = String(task.bytes || 0);
    row.classList.toggle('selected', app.selected.has(task.id));
    row.classList.toggle('focused', app.focused === task.id);
    p.check.checked = app.selected.has(task.id);
    const name = taskName(task);
    const key = task.id + '|' + task.state + '|' + (task.error ? task.error.message : '') + '|' + (task.note || '') + '|' + (task.path || '');
    if (row._key !== key) {
      row._key = key;
      p.name.textContent = name;
      p.name.title = name;
      p.check.setAttribute('aria-label', 'Select ' + name);
      if (task.state === 'failed' && task.error) {
        p.sub.textContent = withoutUrl(task.error.message, task.url);
        p.sub.className = 'sub error-text';
      } else if (task.note) {
        p.sub.textContent = task.note;
        p.sub.className = 'sub note';
      } else {
        p.sub.textContent = task.url;
        p.sub.className = 'sub';
      }
      p.sub.title = p.sub.textContent;
      p.state.textContent = task.state;
      p.state.className = 'badge state-' + task.state;
    }
    const total = typeof task.total === 'number' ? task.total : null;
    const bytes = task.bytes || 0;
    if (total && total > 0) {
      p.progress.value = Math.min(1000, Math.floor((bytes / total) * 1000));
      p.percent.textContent = Math.floor((bytes / total) * 100) + '%';
    } else if (task.state === 'finished') {
      p.progress.value = 1000;
      p.percent.textContent = '100%';
    } else {
      p.progress.removeAttribute('value'); // indeterminate
      p.percent.textContent = '';
    }
    p.bytes.textContent = total !== null ? formatBytes(bytes) + ' / ' + formatBytes(total) : formatBytes(bytes);
    p.speed.textContent = task.state === 'running' ? formatSpeed(task.bytesPerSecond) : '—';
    p.eta.textContent = formatDuration(etaOf(task));
  }

  function renderRows() {
    const list = $('task-list');
    const inner = $('task-list-inner');
    const height = list.clientHeight || 600;
    const first = Math.max(0, Math.floor(list.scrollTop / app.rowHeight) - OVERSCAN);
    const last = Math.min(app.view.length, Math.ceil((list.scrollTop + height) / app.rowHeight) + OVERSCAN);
    const needed = Math.max(0, last - first);
    while (rowPool.length < needed) {
      const row = makeRow();
      rowPool.push(row);
      inner.appendChild(row);
    }
    for (let i = 0; i < needed; i++) {
      const row = rowPool[i];
      const task = app.tasks.get(app.view[first + i]);
      if (!task) continue;
      if (row.hidden) row.hidden = false;
      fillRow(row, task, first + i);
    }
    for (let i = needed; i < Math.max(rowsShown, needed); i++) {
      const row = rowPool[i];
      if (row && !row.hidden) { row.hidden = true; delete row.dataset.taskId; row._key = ''; }
    }
    rowsShown = needed;
  }

  function renderStatus() {
    const counts = {};
    for (const s of STATES) counts[s] = 0;
    for (const task of app.tasks.values()) counts[task.state] = (counts[task.state] || 0) + 1;
    const parts = [app.tasks.size + ' tasks'];
    for (const s of STATES) if (counts[s]) parts.push(counts[s] + ' ' + s);
    if (app.view.length !== app.tasks.size) parts.push(app.view.length + ' shown');
    $('status-counts').textContent = parts.join(' · ');
    const n = app.selected.size;
    $('selection-count').textContent = n ? n + ' selected' : '';
    for (const id of ['action-pause', 'action-resume', 'action-priority-up', 'action-priority-down', 'action-remove', 'action-delete']) {
      $(id).disabled = n === 0;
    }
    const all = $('select-all');
    const shownSelected = n && app.view.length ? app.view.every((id) => app.selected.has(id)) : false;
    all.checked = shownSelected;
    all.indeterminate = !shownSelected && n > 0;
  }

  function renderDetail() {
    const id = app.focused;
    const task = id ? app.tasks.get(id) : null;
    $('detail').dataset.taskId = task ? task.id : '';
    $('detail-empty').hidden = !!task;
    $('detail-body').hidden = !task;
    if (!task) return;
    $('detail-name').textContent = taskName(task);
    $('detail-state').textContent = task.state;
    $('detail-url').textContent = task.url;
    $('detail-path').textContent = task.path || '—';
    $('detail-bytes').textContent = typeof task.total === 'number'
      ? formatBytes(task.bytes || 0) + ' of ' + formatBytes(task.total) + ' (' + (task.bytes || 0).toLocaleString() + ' B)'
      : formatBytes(task.bytes || 0);
    $('detail-speed').textContent = task.state === 'running'
      ? formatSpeed(task.bytesPerSecond) + ', ' + formatDuration(etaOf(task)) + ' left'
      : '—';
    $('detail-priority').textContent = String(task.priority || 0);
    $('detail-pause').disabled = !(task.state === 'running' || task.state === 'waiting');
    $('detail-resume').disabled = !(task.state === 'paused' || task.state === 'failed' || task.state === 'cancelled');
    const note = task.note || '';
    $('detail-note').textContent = note;
    $('detail-note').hidden = !note;
    $('detail-note-label').hidden = !note;
    const error = task.error ? task.error.message : '';
    $('detail-error').textContent = error;
    $('detail-error').hidden = !error;
    $('detail-error-label').hidden = !error;
  }

  function schedule() {
    if (app.frameRequested || app.loggedOut) return;
    app.frameRequested = true;
    requestAnimationFrame(frame);
  }

  function frame() {
    app.frameRequested = false;
    if (app.loggedOut) return;
    if (app.dirtyView) { app.dirtyView = false; rebuildView(); }
    if (app.dirtyRows) { app.dirtyRows = false; renderRows(); }
    if (app.dirtyStatus) { app.dirtyStatus = false; renderStatus(); }
    if (app.dirtyDetail) { app.dirtyDetail = false; renderDetail(); }
    if (!app.interactiveMarked && rowsShown > 0) {
      app.interactiveMarked = true;
      performance.mark('haul-interactive');
      document.body.dataset.interactive = 'true';
    }
  }

  // ------------------------------------------------------------------ selection
  function setFocus(id) {
    if (!id) closeDetail();
    if (app.focused === id) return;
    app.focused = id;
    app.segments = null;
    app.segmentsFromStream = false;
    drawSegments();
    app.dirtyDetail = true;
    app.dirtyRows = true;
    if (id) loadSegments(id);
    schedule();
  }

  async function loadSegments(id) {
    try {
      const map = await rpc('tasks.segments', { session: app.session, id: id });
      if (app.focused !== id || !map) return;
      // A stream reading newer than this answer wins.
      if (app.segmentsFromStream && app.segments && app.segments.id === id) return;
      app.segments = { id: id, total: map.total, done: map.done || [], active: map.active || [] };
      drawSegments();
    } catch (err) {
      if (app.focused === id) reportError('Could not read the segment map', err);
    }
  }

  /** Where the details open over the list (narrow windows), shows them; the Close button takes the focus. */
  function openDetail() {
    if (!NARROW.matches || !app.focused) return;
    $('detail').classList.add('open');
    // Drawn while hidden, the map had no width: it is drawn again at the sheet's.
    drawSegments();
    $('detail-close').focus();
  }

  function closeDetail() {
    const detail = $('detail');
    if (!detail.classList.contains('open')) return;
    detail.classList.remove('open');
    $('task-list').focus();
  }

  function rowOf(target) {
    const row = target.closest('.row');
    return row && row.dataset.taskId ? row : null;
  }

  function selectRange(fromId, toId, additive) {
    const a = app.viewIndex.get(fromId);
    const b = app.viewIndex.get(toId);
    if (a === undefined || b === undefined) return false;
    if (!additive) app.selected.clear();
    for (let i = Math.min(a, b); i <= Math.max(a, b); i++) app.selected.add(app.view[i]);
    return true;
  }

  function onListClick(event) {
    const row = rowOf(event.target);
    if (!row) return;
    const id = row.dataset.taskId;
    const onCheckbox = event.target.classList.contains('row-check');
    if (event.shiftKey && app.anchor && selectRange(app.anchor, id, onCheckbox || event.ctrlKey || event.metaKey)) {
      // a range from the anchor
    } else if (onCheckbox || event.ctrlKey || event.metaKey) {
      if (app.selected.has(id)) app.selected.delete(id); else app.selected.add(id);
      app.anchor = id;
    } else {
      app.selected.clear();
      app.selected.add(id);
      app.anchor = id;
    }
    if (!onCheckbox || !app.focused) setFocus(id);
    // A plain tap or click on a task shows its details (over the list where the window is narrow).
    if (!onCheckbox && !event.shiftKey && !event.ctrlKey && !event.metaKey) openDetail();
    app.dirtyRows = true;
    app.dirtyStatus = true;
    schedule();
  }

  function onSelectAll() {
    const all = $('select-all');
    if (all.checked) for (const id of app.view) app.selected.add(id);
    else app.selected.clear();
    app.dirtyRows = true;
    app.dirtyStatus = true;
    schedule();
  }

  function onListKey(event) {
    if (!app.view.length) return;
    let index = app.focused && app.viewIndex.has(app.focused) ? app.viewIndex.get(app.focused) : -1;
    if (event.key === 'ArrowDown') index = Math.min(app.view.length - 1, index + 1);
    else if (event.key === 'ArrowUp') index = Math.max(0, index - 1);
    else if (event.key === 'a' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      for (const id of app.view) app.selected.add(id);
      app.dirtyRows = true; app.dirtyStatus = true; schedule();
      return;
    } else return;
    event.preventDefault();
    const id = app.view[index];
    app.selected.clear();
    app.selected.add(id);
    app.anchor = id;
    setFocus(id);
    const list = $('task-list');
    const top = index * app.rowHeight;
    if (top < list.scrollTop) list.scrollTop = top;
    else if (top + app.rowHeight > list.scrollTop + list.clientHeight) list.scrollTop = top + app.rowHeight - list.clientHeight;
    app.dirtyRows = true; app.dirtyStatus = true; schedule();
  }

  // ------------------------------------------------------------------ actions
  function selectedIds() {
    return app.order.filter((id) => app.selected.has(id));
  }

  async function act(method, extra, label) {
    const ids = selectedIds();
    if (!ids.length) return;
    try {
      for (let i = 0; i < ids.length; i += 5000) {
        await rpc(method, Object.assign({ session: app.session, ids: ids.slice(i, i + 5000) }, extra || {}));
      }
      if (method === 'tasks.remove') forgetTasks(ids);
    } catch (err) {
      reportError('Could not ' + label, err);
    }
  }

  /** An action on the task whose details are shown. */
  async function actOnFocused(method, extra, label) {
    const id = app.focused;
    if (!id) return;
    try {
      await rpc(method, Object.assign({ session: app.session, ids: [id] }, extra || {}));
      if (method === 'tasks.remove') forgetTasks([id]);
    } catch (err) {
      reportError('Could not ' + label, err);
    }
  }

  /** The Settings and Actions buttons (phones): each shows or hides what it folds. */
  function wireMenu(buttonId, panelId) {
    const button = $(buttonId);
    const panel = $(panelId);
    button.addEventListener('click', () => {
      const open = button.getAttribute('aria-expanded') !== 'true';
      button.setAttribute('aria-expanded', String(open));
      panel.classList.toggle('open', open);
    });
  }

  async function changePriority(delta) {
    const groups = new Map();
    for (const id of selectedIds()) {
      const task = app.tasks.get(id);
      const next = (task.priority || 0) + delta;
      if (!groups.has(next)) groups.set(next, []);
      groups.get(next).push(id);
    }
    try {
      for (const [priority, ids] of groups) {
        await rpc('tasks.setPriority', { session: app.session, ids: ids, priority: priority });
        for (const id of ids) { const t = app.tasks.get(id); if (t) t.priority = priority; }
      }
      app.dirtyDetail = true;
      schedule();
    } catch (err) {
      reportError('Could not change the priority', err);
    }
  }

  function confirmDelete() {
    const n = app.selected.size;
    const one = n === 1 ? app.tasks.get(selectedIds()[0]) : null;
    $('confirm-text').textContent = one
      ? 'Remove "' + taskName(one) + '" and delete its file' + (one.path ? ' ' + one.path : '') + '?'
      : 'Remove ' + n + ' tasks and delete their files?';
    $('confirm-dialog').showModal();
  }

  // ------------------------------------------------------------------ session controls
  async function applyConcurrency() {
    const input = $('session-concurrency');
    const count = Number(input.value);
    if (input.value === '' || !Number.isInteger(count) || count < 0) {
      toast('Downloads at once: give a whole number, 0 or more', true);
      return;
    }
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

  // ------------------------------------------------------------------ add dialog
  function splitUrls(text) {
    const urls = [];
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) continue;
      urls.push(line);
    }
    return urls;
  }

  function openAddDialog(urls) {
    const dialog = $('add-dialog');
    if (urls && urls.length) {
      const current = $('add-urls').value.trim();
      $('add-urls').value = (current ? current + '\n' : '') + urls.join('\n');
    }
    $('add-error').textContent = '';
    if (!dialog.open) dialog.showModal();
    $('add-urls').focus();
  }

  function closeAddDialog() {
    $('add-dialog').close();
  }

  function buildAdds() {
    const urls = splitUrls($('add-urls').value);
    if (!urls.length) throw new Error('Give at least one URL');
    for (const url of urls) {
      if (!/^(https?):\/\//i.test(url)) throw new Error('Not an http(s) URL: ' + url);
    }
    const directory = $('add-directory').value.trim();
    const filename = $('add-filename').value.trim();
    const checksum = $('add-checksum').value.trim();
    if (directory && !directory.startsWith('/')) throw new Error('The folder must be an absolute path (starting with /)');
    if (filename && urls.length > 1) throw new Error('A file name is for one URL only; give a folder for many');
    if (filename && (filename.includes('/') || filename === '.' || filename === '..')) throw new Error('The file name must not contain /');
    if (checksum && urls.length > 1) throw new Error('A checksum is for one URL only');
    if (checksum && !/^sha256:[0-9a-fA-F]{64}$/.test(checksum)) throw new Error('The checksum must be sha256: followed by 64 hex digits');
    const headers = [];
    for (const raw of $('add-headers').value.split(/\r?\n/)) {
      const line = raw.trim();
      if (!line) continue;
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error('A header line must be "Name: value": ' + line);
      headers.push({ name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() });
    }
    const priorityText = $('add-priority').value.trim();
    const priority = priorityText === '' ? 0 : Number(priorityText);
    if (!Number.isInteger(priority)) throw new Error('The priority must be a whole number');
    const segmentsText = $('add-segments').value.trim();
    const segments = segmentsText === '' ? null : Number(segmentsText);
    if (segments !== null && (!Number.isInteger(segments) || segments < 1 || segments > 32)) throw new Error('Segments must be a whole number from 1 to 32');
    const rate = parseRate($('add-rate').value);
    if (Number.isNaN(rate)) throw new Error('The speed limit must be bytes per second like 500K or 2M');
    let path = null;
    if (filename) {
      const base = directory || (app.configuration && app.configuration.defaultDirectory) || '';
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

  async function submitAdd(event) {
    event.preventDefault();
    const error = $('add-error');
    error.textContent = '';
    let adds;
    try { adds = buildAdds(); } catch (err) { error.textContent = err.message; return; }
    const submit = $('add-submit');
    submit.disabled = true;
    try {
      for (let i = 0; i < adds.length; i += ADD_CHUNK) {
        const chunk = adds.slice(i, i + ADD_CHUNK);
        const result = await rpc('tasks.add', { session: app.session, tasks: chunk, reply: chunk.length > 200 ? 'ids' : 'tasks' });
        // The stream may already have told newer news of these tasks (running, progress): keep that.
        for (const task of (result && result.tasks) || []) if (!app.tasks.has(task.id)) upsertTask(task);
      }
      schedule();
      $('add-form').reset();
      closeAddDialog();
      toast(adds.length === 1 ? 'Added 1 download' : 'Added ' + adds.length + ' downloads');
      if (!app.sessions.includes(app.session)) { app.sessions.push(app.session); fillSessions(); loadConfiguration(); }
    } catch (err) {
      if (!(err instanceof LoggedOut)) error.textContent = err.message;
    } finally {
      submit.disabled = false;
    }
  }

  // Dropping links or a text file of URLs anywhere on the page opens the add dialog with them.
  let dragDepth = 0;
  function dropCarriesSomething(event) {
    const types = event.dataTransfer ? Array.from(event.dataTransfer.types) : [];
    return types.includes('Files') || types.includes('text/uri-list') || types.includes('text/plain');
  }

  async function onDrop(event) {
    event.preventDefault();
    dragDepth = 0;
    $('drop-hint').hidden = true;
    const data = event.dataTransfer;
    if (!data) return;
    let text = '';
    if (data.files && data.files.length) {
      for (const file of Array.from(data.files)) {
        if (file.size > 16 * 1024 * 1024) { toast('That file is too large for a list of URLs (over 16 MiB)', true); return; }
        text += (await file.text()) + '\n';
      }
    } else {
      text = data.getData('text/uri-list') || data.getData('text/plain') || '';
    }
    const urls = splitUrls(text).filter((line) => /^https?:\/\//i.test(line));
    if (!urls.length) { toast('Nothing to add: the drop held no http(s) URL', true); return; }
    openAddDialog(urls);
  }

  // ------------------------------------------------------------------ speed graph
  function sampleSpeed() {
    if (app.loggedOut) return;
    let total = 0;
    for (const bps of app.speeds.values()) total += bps;
    app.history[app.historyHead] = total;
    app.historyHead = (app.historyHead + 1) % GRAPH_SECONDS;
    $('total-speed').textContent = formatSpeed(total) === '—' ? '0 B/s' : formatSpeed(total);
    drawGraph();
  }

  function sizeCanvas(canvas) {
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.floor(canvas.clientWidth * ratio));
    const height = Math.max(1, Math.floor(canvas.clientHeight * ratio));
    if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
    return ratio;
  }

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function niceMax(value) {
    if (value <= 0) return 1024;
    const exp = Math.pow(2, Math.ceil(Math.log2(value)));
    return exp;
  }

  function drawGraph() {
    const canvas = $('speed-graph');
    if (!canvas) return;
    const ratio = sizeCanvas(canvas);
    const ctx = canvas.getContext('2d');
    const w = canvas.width;
    const h = canvas.height;
    ctx.clearRect(0, 0, w, h);
    let max = 0;
    for (let i = 0; i < GRAPH_SECONDS; i++) max = Math.max(max, app.history[i]);
    const top = niceMax(max);
    $('speed-graph-max').textContent = 'max ' + formatSpeed(max === 0 ? 0 : max).replace('—', '0 B/s') + ' · scale ' + formatBytes(top) + '/s';
    ctx.strokeStyle = cssVar('--grid');
    ctx.lineWidth = 1;
    for (let i = 1; i < 4; i++) {
      const y = Math.round((h * i) / 4) + 0.5;
      ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(w, y); ctx.stroke();
    }
    const step = w / (GRAPH_SECONDS - 1);
    const pad = 2 * ratio;
    ctx.beginPath();
    for (let i = 0; i < GRAPH_SECONDS; i++) {
      const value = app.history[(app.historyHead + i) % GRAPH_SECONDS];
      const x = i * step;
      const y = h - pad - (value / top) * (h - 2 * pad);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    }
    ctx.lineTo(w, h);
    ctx.lineTo(0, h);
    ctx.closePath();
    ctx.fillStyle = cssVar('--graph-fill');
    ctx.fill();
    ctx.beginPath();
    for (let i = 0; i < GRAPH_SECONDS; i++) {
      const value = app.history[(app.historyHead + i) % GRAPH_SECONDS];
      const x = i * step;
      const y = h - pad - (value / top) * (h - 2 * pad);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    }
    ctx.strokeStyle = cssVar('--accent');
    ctx.lineWidth = 1.5 * ratio;
    ctx.stroke();
  }

  // ------------------------------------------------------------------ segment map
  function sumRanges(ranges) {
    let sum = 0;
    for (const r of ranges) if (Array.isArray(r) && r.length === 2) sum += Math.max(0, r[1] - r[0]);
    return sum;
  }

  function drawSegments() {
    const canvas = $('segment-map');
    if (!canvas) return;
    const map = app.segments;
    const task = map ? app.tasks.get(map.id) : null;
    const done = map ? map.done : [];
    // Only a running task has bytes being fetched (a map read before it paused may still list some).
    const active = map && task && task.state === 'running' ? map.active : [];
    const total = map && typeof map.total === 'number' ? map.total : null;
    const doneBytes = sumRanges(done);
    const activeBytes = sumRanges(active);
    const todoBytes = total === null ? 0 : Math.max(0, total - doneBytes - activeBytes);
    canvas.dataset.total = total === null ? '' : String(total);
    canvas.dataset.doneBytes = String(doneBytes);
    canvas.dataset.activeBytes = String(activeBytes);
    canvas.dataset.doneRanges = String(done.length);
    canvas.dataset.activeRanges = String(active.length);
    canvas.dataset.todoBytes = String(todoBytes);
    // The legend names what the map shows, nothing else.
    $('legend-done').hidden = !(doneBytes > 0);
    $('legend-active').hidden = !(activeBytes > 0);
    $('legend-todo').hidden = !(todoBytes > 0);
    canvas.dataset.map = JSON.stringify({ done: done, active: active });
    const summary = $('segment-summary');
    if (summary) {
      if (!map) summary.textContent = '';
      else if (total === null) summary.textContent = formatBytes(doneBytes) + ' done; size unknown';
      else summary.textContent = formatBytes(doneBytes) + ' of ' + formatBytes(total) + ' done in ' + done.length
        + (done.length === 1 ? ' range' : ' ranges') + (active.length ? ', ' + active.length + ' being fetched' : '')
        + (todoBytes > 0 ? ', ' + formatBytes(todoBytes) + ' not yet' : '');
    }
    sizeCanvas(canvas);
    const ctx = canvas.getContext('2d');
    const w = canvas.width;
    const h = canvas.height;
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = cssVar('--map-todo');
    ctx.fillRect(0, 0, w, h);
    const scaleTo = total || Math.max(1, ...done.map((r) => r[1]), ...active.map((r) => r[1]));
    const paint = (ranges, color, y, height) => {
      ctx.fillStyle = color;
      for (const r of ranges) {
        const x0 = (r[0] / scaleTo) * w;
        const x1 = (r[1] / scaleTo) * w;
        ctx.fillRect(Math.floor(x0), y, Math.max(1, Math.ceil(x1 - x0)), height);
      }
    };
    paint(done, cssVar('--map-done'), 0, h);
    paint(active, cssVar('--map-active'), 0, h);
  }

  // ------------------------------------------------------------------ wiring
  function wire() {
    const list = $('task-list');
    list.addEventListener('scroll', () => { app.dirtyRows = true; schedule(); }, { passive: true });
    list.addEventListener('click', onListClick);
    list.addEventListener('keydown', onListKey);
    window.addEventListener('resize', () => { measureRowHeight(); app.dirtyRows = true; schedule(); drawGraph(); drawSegments(); });
    wireMenu('settings-toggle', 'session-controls');
    wireMenu('actions-toggle', 'task-actions');
    $('detail-close').addEventListener('click', closeDetail);
    $('detail-pause').addEventListener('click', () => actOnFocused('tasks.pause', null, 'pause'));
    $('detail-resume').addEventListener('click', () => actOnFocused('tasks.resume', null, 'resume'));
    $('detail-remove').addEventListener('click', () => actOnFocused('tasks.remove', { deleteFile: false }, 'remove'));
    $('select-all').addEventListener('change', onSelectAll);

    $('action-pause').addEventListener('click', () => act('tasks.pause', null, 'pause'));
    $('action-resume').addEventListener('click', () => act('tasks.resume', null, 'resume'));
    $('action-remove').addEventListener('click', () => act('tasks.remove', { deleteFile: false }, 'remove'));
    $('action-delete').addEventListener('click', confirmDelete);
    $('action-priority-up').addEventListener('click', () => changePriority(1));
    $('action-priority-down').addEventListener('click', () => changePriority(-1));
    $('confirm-cancel').addEventListener('click', () => $('confirm-dialog').close());
    $('confirm-ok').addEventListener('click', () => {
      $('confirm-dialog').close();
      act('tasks.remove', { deleteFile: true }, 'remove and delete');
    });

    let searchTimer = 0;
    $('search').addEventListener('input', () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => {
        app.search = $('search').value.trim().toLowerCase();
        app.pruneSelection = true;
        app.dirtyView = true;
        schedule();
      }, 120);
    });
    $('filter-state').addEventListener('change', () => {
      app.filter = $('filter-state').value;
      app.pruneSelection = true;
      app.dirtyView = true;
      schedule();
    });

    $('session-select').addEventListener('change', () => switchSession($('session-select').value));
    $('session-new').addEventListener('click', () => {
      $('session-error').textContent = '';
      $('session-name').value = '';
      $('session-dialog').showModal();
    });
    $('session-cancel').addEventListener('click', () => $('session-dialog').close());
    $('session-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      const name = $('session-name').value.trim();
      if (!/^[A-Za-z0-9._-]+$/.test(name)) {
        $('session-error').textContent = 'Use letters, digits, ".", "_" and "-" only';
        return;
      }
      try {
        await rpc('session.open', { session: name, configuration: {} });
        if (!app.sessions.includes(name)) app.sessions.push(name);
        $('session-dialog').close();
        switchSession(name);
      } catch (err) {
        if (!(err instanceof LoggedOut)) $('session-error').textContent = err.message;
      }
    });

    $('session-concurrency').addEventListener('change', applyConcurrency);
    $('session-rate').addEventListener('change', applySessionRate);

    $('add-button').addEventListener('click', () => openAddDialog(null));
    $('add-cancel').addEventListener('click', closeAddDialog);
    $('add-form').addEventListener('submit', submitAdd);

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
    document.addEventListener('drop', onDrop);
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && $('detail').classList.contains('open') && !document.querySelector('dialog[open]')) {
        closeDetail();
        return;
      }
      const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement
        || event.target instanceof HTMLSelectElement;
      if (!typing && event.key === 'n' && !event.ctrlKey && !event.metaKey && !event.altKey && !document.querySelector('dialog[open]')) {
        event.preventDefault();
        openAddDialog(null);
      }
    });

    setInterval(sampleSpeed, 1000);
  }

  async function start() {
    let me;
    try {
      const response = await fetch('/api/me', { credentials: 'same-origin', cache: 'no-store' });
      if (response.status === 401) { showLoggedOut(); return; }
      if (!response.ok) throw new Error('the server answered ' + response.status);
      me = await response.json();
    } catch (err) {
      $('loading').textContent = 'Could not reach the dashboard: ' + err.message + '. Is `haul daemon` still running?';
      return;
    }
    app.csrf = me.csrf;
    app.sessions = Array.isArray(me.sessions) ? me.sessions : [];
    app.version = me.version || '';
    $('version').textContent = app.version ? 'haul ' + app.version : '';
    let session = '';
    try { session = localStorage.getItem('haul.session') || ''; } catch (e) { session = ''; }
    if (!app.sessions.includes(session)) session = app.sessions.includes('default') || !app.sessions.length ? 'default' : app.sessions[0];
    $('loading').hidden = true;
    $('app').hidden = false;
    wire();
    measureRowHeight();
    drawGraph();
    await switchSession(session);
  }

  // Test and benchmark hooks (no secrets): counts and timings only.
  window.haulDashboard = {
    taskCount: () => app.tasks.size,
    loaded: () => app.loaded,
    eventCount: () => app.eventCount,
    renderedRows: () => document.querySelectorAll('#task-list-inner .row:not([hidden])').length,
  };

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
