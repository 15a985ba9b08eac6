// kvledger web timeline: the request list and one request's swimlane timeline, drawn with plain
// SVG. Reads the JSON of /v1/requests, /v1/requests/{id} and /v1/hangs (a live node, a proxy, or
// `kvledger serve` over journals), follows /v1/events when the server has it, or renders the data
// embedded in the page (`kvledger inspect --html`). No network access beyond the serving origin.
(function () {
  'use strict';

  var SVGNS = 'http://www.w3.org/2000/svg';
  var LANES = [
    {id: 'proxy', label: 'proxy'},
    {id: 'p-sched', label: 'prefill scheduler'},
    {id: 'p-worker', label: 'prefill worker'},
    {id: 'wire', label: 'the wire'},
    {id: 'd-worker', label: 'decode worker'},
    {id: 'd-sched', label: 'decode scheduler'}
  ];
  // Frames on the wire (sent effects and received inputs) and the worker side's events; the rest
  // is the scheduler side (effects go where the input that caused them went).
  var WIRE = set(['remote_blocks_received', 'write_done_received', 'release_received', 'frame_rejected',
    'notify_send_failed', 'send_remote_blocks', 'send_release', 'send_write_done', 'send_write_failed',
    'raw_completion_received']);
  var WORKER = set(['load_started', 'layer_saved', 'save_waited', 'finished_polled', 'handshake_completed',
    'handshake_failed', 'handshake_voted', 'transfer_completed', 'post_write', 'post_read', 'start_handshake', 'finished_reported',
    'ack_parked', 'stale_ack_dropped']);
  // A proxy's journal records (kvledger proxy): the proxy lane.
  var PROXY = set(['proxy_started', 'instance_registered', 'instance_expired', 'registration_rejected',
    'request_rejected', 'request_routed', 'leg_sent', 'leg_answered', 'leg_failed', 'leg_cancelled',
    'request_completed', 'records_dropped']);
  // Where each detector's missing event should have happened.
  var FINDING_LANE = {
    'stuck-waiting': 'wire', 'handshake-incomplete': 'wire', 'reaped-without-ack': 'wire',
    'notify-unhandshaken-rank': 'wire', 'wrong-port-offset-form': 'wire', 'notify-no-listener': 'wire',
    'empty-remote-blocks': 'wire', 'ack-before-mapping': 'wire', 'failed-read-no-release': 'wire',
    'ack-deficit': 'wire', 'ack-before-finish': 'wire',
    'transfer-status-poisoned': 'worker', 'unknown-completion-id': 'worker', 'free-while-in-flight': 'worker',
    'listener-death': 'worker', 'handshake-vote-waiting': 'worker', 'handshake-vote-failed': 'worker'
  };
  // The frame a sent effect is answered by on the other node.
  var RECEIVED_AS = {send_remote_blocks: 'remote_blocks_received', send_release: 'release_received',
    send_write_done: 'write_done_received', send_write_failed: 'write_done_received'};
  var NODE_COLORS = ['#1570ef', '#dd2590', '#079455', '#f79009', '#6938ef', '#0e9384', '#e04f16', '#475467'];
  var TERMINAL_PHASES = set(['FINISHED', 'FREED_AFTER_ACK', 'REAPED', 'ABORTED_BEFORE_ALLOC', 'PROXY_ANSWERED', 'PROXY_FAILED', 'PROXY_CLIENT_GONE']);
  var PHASE_COLORS = {ADMITTED: '#e0eaff', PREFILLING: '#d1e9ff', WAITING_FOR_REMOTE_KVS: '#fef0c7',
    DEFERRED_FREE: '#fdead7', FINISHED: '#d3f8df', FREED_AFTER_ACK: '#d3f8df', REAPED: '#fee4e2'};

  var state = {
    token: null, rows: [], findings: [], nodeInfo: {}, live: false, events: 0, openId: null,
    timeline: null, refreshTimer: null, lastRefresh: 0, inFlight: false, standalone: false, followGen: 0,
    sort: {col: null, dir: 1}, group: '', view: {k: 1, off: 0}, chart: null
  };

  function set(a) { var s = {}; a.forEach(function (x) { s[x] = true; }); return s; }
  function $(sel) { return document.querySelector(sel); }
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    (kids || []).forEach(function (k) { e.appendChild(typeof k === 'string' ? document.createTextNode(k) : k); });
    return e;
  }
  function svg(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function setAttrs(e, attrs) {
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') { e.textContent = attrs[k]; } else if (attrs[k] !== null && attrs[k] !== undefined) { e.setAttribute(k, attrs[k]); }
    });
  }
  function title(e, text) { var t = svg('title', {}, e); t.textContent = text; return e; }
  function shortId(id) {
    if (!id) { return ''; }
    var m = /^(cmpl-)?___prefill_addr_.*?___decode_addr_\S*?_([0-9a-f]{32})(.*)$/.exec(id);
    return m ? (m[1] || '') + '..._' + m[2] + m[3] : id;
  }
  // A request id in the list: the part that tells requests apart (the proxy's uuid, its first 12
  // digits, and the engine's suffix); the whole id is the cell's title.
  function listId(id) {
    var m = /___decode_addr_\S*?_([0-9a-f]{32})(.*)$/.exec(id || '');
    return m ? '\u2026' + m[1].slice(0, 12) + (m[2] ? '\u2026' + m[2].slice(-6) : '') : id;
  }
  // The one text form of times, as every kvledger report writes them (ledger.text.Seconds):
  // a duration in seconds cut (not rounded) to six decimals, with the unit, "0.000394 s"; a time
  // since the first entry "t+0.000394 s" (before it "t-0.500000 s"). Integer nanoseconds in.
  function durationNs(ns) {
    if (ns === null || ns === undefined || isNaN(ns)) { return ''; }
    ns = Math.trunc(ns);
    var a = Math.abs(ns), micros = Math.floor((a % 1e9) / 1e3);
    return (ns < 0 ? '-' : '') + Math.floor(a / 1e9) + '.' + ('00000' + micros).slice(-6) + ' s';
  }
  function offsetNs(ns) {
    var d = durationNs(ns);
    return d === '' ? '' : ns < 0 ? 't' + d : 't+' + d;
  }
  // The formatter, for the browser test to compare with ledger.text.Seconds.
  window.kvledgerTime = {durationNs: durationNs, offsetNs: offsetNs};
  // A duration the API gives in seconds (a double): to whole nanoseconds, then as durationNs.
  function secs(s) { return s === null || s === undefined || isNaN(s) ? '' : durationNs(Math.round(s * 1e9)); }
  function showError(msg) { $('#error').textContent = msg || ''; }

  // ------------------------------------------------------------------ data

  function api(path) {
    var headers = {};
    if (state.token) { headers.Authorization = 'Bearer ' + state.token; }
    return fetch(path, {headers: headers, cache: 'no-store'}).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (!r.ok) {
          // {"error": {"message": ...}} (OpenAI's shape: kvledger serve, the proxy) or {"error": "..."} (a node)
          var msg = body.error && typeof body.error === 'object' ? body.error.message : body.error;
          var e = new Error(msg || (r.status + ' ' + r.statusText)); e.status = r.status; throw e;
        }
        return body;
      });
    });
  }

  function key(node, rid) { return node + '\u0000' + rid; }

  function loadList() {
    if (state.inFlight) { state.again = true; return Promise.resolve(); }
    state.inFlight = true;
    state.lastRefresh = Date.now();
    return Promise.all([api('/v1/requests?limit=10000'), api('/v1/hangs')]).then(function (res) {
      var list = res[0], hangs = res[1];
      (list.nodes || hangs.nodes || []).forEach(function (n) { state.nodeInfo[n.node] = n; });
      var byKey = {};
      state.findings = hangs.findings || [];
      state.findings.forEach(function (f) {
        if (f.request_id) { (byKey[key(f.node, f.request_id)] = byKey[key(f.node, f.request_id)] || []).push(f); }
      });
      state.rows = (list.requests || []).map(function (r) {
        var node = r.node || list.node;
        var fs = byKey[key(node, r.request_id)] || [];
        var anomalies = (r.anomalies || []).slice();
        fs.forEach(function (f) {
          if (f.detector === 'anomaly') {
            var kind = /^[A-Z_]+/.exec(f.message || '');
            if (kind && anomalies.indexOf(kind[0]) < 0) { anomalies.push(kind[0]); }
          }
        });
        // an anomaly, or the engine's 'Reaped N' warning for a deferral its own ACK freed, is not a hang
        var hangFindings = fs.filter(function (f) { return f.detector !== 'anomaly' && f.detector !== 'reaped-warning'; });
        var hung = hangFindings.length > 0 || (!r.terminal && fs.length > 0);
        var hang = hangFindings[0] || (hung ? fs[0] : null);
        // how long the request took (admission to its terminal phase), or has been open so far
        var dur = r.age_s;
        if (r.terminal && r.in_phase_s !== null && r.in_phase_s !== undefined && r.age_s !== null) { dur = r.age_s - r.in_phase_s; }
        var group = hung ? 'hung ' + (hang && hang.bug_class !== undefined && hang.bug_class !== null ? hang.bug_class : '-') + ' ' + (hang ? hang.detector : '')
          : anomalies.length ? 'anomalous' : 'other';
        return {
          node: node, id: r.request_id, phase: r.phase, terminal: r.terminal, age: r.age_s, dur: dur, tid: r.transfer_id,
          anomalies: anomalies, findings: fs, hung: hung, hang: hang, group: group,
          rank: hung ? 0 : anomalies.length ? 1 : 2, cls: hang && hang.bug_class !== undefined && hang.bug_class !== null ? Number(hang.bug_class) : 1e9
        };
      });
      var source = list.node ? 'node ' + list.node : (list.nodes || []).length + ' journal(s): '
        + (list.nodes || []).map(function (n) { return n.node; }).join(', ');
      $('#source').textContent = source + ' \u00b7 ' + state.rows.length + ' request(s), ' + state.findings.length + ' finding(s)';
      fillFilters();
      renderList();
      showError('');
    }).catch(function (e) {
      showError(e.status === 401 ? 'this server needs a token: open /ui/#token=YOUR_TOKEN' : 'cannot load the requests: ' + e.message);
    }).then(function () {
      state.inFlight = false;
      if (state.again) { state.again = false; return loadList(); }
    });
  }

  // ------------------------------------------------------------------ list

  function fillFilters() {
    fillSelect('#phase-filter', state.rows.map(function (r) { return r.phase; }), 'every phase');
    var classes = [];
    state.findings.forEach(function (f) { if (f.bug_class) { classes.push(String(f.bug_class)); } });
    fillSelect('#class-filter', classes, 'every bug class', function (c) { return 'class ' + c; });
    fillSelect('#node-filter', state.rows.map(function (r) { return r.node; }), 'every node');
  }

  function fillSelect(sel, values, all, label) {
    var s = $(sel), keep = s.value, seen = {};
    var vals = values.filter(function (v) { if (seen[v]) { return false; } seen[v] = true; return true; }).sort(function (a, b) {
      return isNaN(a) || isNaN(b) ? (a < b ? -1 : a > b ? 1 : 0) : a - b;
    });
    s.textContent = '';
    s.appendChild(el('option', {value: ''}, [all]));
    vals.forEach(function (v) { s.appendChild(el('option', {value: v}, [label ? label(v) : v])); });
    s.value = seen[keep] ? keep : '';
  }

  // The order of the list: findings first (hung requests grouped by bug class and detector, then
  // the anomalous ones, then the rest, the longest first in each group), or by a clicked column.
  function compareRows(a, b) {
    var s = state.sort;
    if (s.col) {
      var d = cmp(sortKey(a, s.col), sortKey(b, s.col));
      if (d) { return s.dir * d; }
    }
    return (a.rank - b.rank) || (a.cls - b.cls) || cmp(a.group, b.group) || cmp(b.dur, a.dur) || cmp(a.id, b.id);
  }
  function sortKey(r, col) {
    switch (col) {
      case 'dur': return r.dur === null || r.dur === undefined ? -1 : r.dur;
      case 'finding': return r.hang ? r.cls + ' ' + r.hang.detector : '\uffff';
      case 'anomaly': return r.anomalies.length ? r.anomalies.join(',') : '\uffff';
      case 'tid': return r.tid || '\uffff';
      default: return r[col] || '';
    }
  }
  function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }

  function groupLabel(g, n) {
    if (g === 'anomalous') { return 'anomalous (' + n + ')'; }
    if (g === 'other') { return 'the rest (' + n + ')'; }
    var p = g.split(' ');
    return (p[1] !== '-' ? 'class ' + p[1] + ' ' : '') + p.slice(2).join(' ') + ' (' + n + ')';
  }

  function renderGroups() {
    var counts = {}, order = [];
    state.rows.slice().sort(compareRowsDefault).forEach(function (r) {
      if (!counts[r.group]) { counts[r.group] = 0; order.push(r.group); }
      counts[r.group]++;
    });
    var box = $('#groups');
    box.textContent = '';
    if (state.group && !counts[state.group]) { state.group = ''; }
    order.forEach(function (g) {
      var b = el('button', {type: 'button', 'data-group': g, 'class': (g.indexOf('hung') === 0 ? 'hung' : g) + (state.group === g ? ' active' : ''),
        title: state.group === g ? 'show every request again' : 'show only these'}, [groupLabel(g, counts[g])]);
      b.addEventListener('click', function () { state.group = state.group === g ? '' : g; renderList(); });
      box.appendChild(b);
    });
  }
  function compareRowsDefault(a, b) {
    return (a.rank - b.rank) || (a.cls - b.cls) || cmp(a.group, b.group) || cmp(b.dur, a.dur) || cmp(a.id, b.id);
  }

  function renderSortHeads() {
    Array.prototype.forEach.call(document.querySelectorAll('#requests th[data-sort]'), function (th) {
      var col = th.getAttribute('data-sort');
      if (state.sort.col === col) { th.setAttribute('aria-sort', state.sort.dir > 0 ? 'ascending' : 'descending'); } else { th.removeAttribute('aria-sort'); }
      th.title = th.title || '';
    });
  }

  function onSort(col) {
    // a column sorts up, then down, then back to findings first
    if (state.sort.col !== col) { state.sort = {col: col, dir: col === 'dur' ? -1 : 1}; } else if (state.sort.dir === (col === 'dur' ? -1 : 1)) {
      state.sort.dir = -state.sort.dir;
    } else { state.sort = {col: null, dir: 1}; }
    renderList();
  }

  function renderList() {
    var q = $('#search').value.trim().toLowerCase();
    var hungOnly = $('#hung-only').checked, phase = $('#phase-filter').value;
    var cls = $('#class-filter').value, node = $('#node-filter').value;
    var tbody = $('#requests tbody');
    tbody.textContent = '';
    renderGroups();
    renderSortHeads();
    var shown = 0, lastGroup = null;
    state.rows.slice().sort(compareRows).forEach(function (r) {
      if (hungOnly && !r.hung) { return; }
      if (state.group && r.group !== state.group) { return; }
      if (phase && r.phase !== phase) { return; }
      if (node && r.node !== node) { return; }
      if (cls && !r.findings.some(function (f) { return String(f.bug_class) === cls; })) { return; }
      if (q) {
        var hay = [r.id, r.tid || '', r.node, r.phase, r.anomalies.join(' ')]
          .concat(r.findings.map(function (f) { return f.detector + ' ' + f.message; })).join(' ').toLowerCase();
        if (hay.indexOf(q) < 0) { return; }
      }
      shown++;
      var hang = r.hang;
      var tidCell = el('td', {title: r.tid || ''}, []);
      if (r.tid) {
        var a = el('a', {href: '#', 'class': 'tid', title: 'every request with this transfer id, on every node: ' + r.tid}, [r.tid]);
        a.addEventListener('click', function (ev) {
          ev.preventDefault(); ev.stopPropagation();
          $('#search').value = r.tid; renderList();
        });
        tidCell.appendChild(a);
      }
      var startsGroup = !state.sort.col && lastGroup !== null && r.group !== lastGroup;
      lastGroup = r.group;
      var findingText = hang ? hang.detector + (hang.bug_class ? ' (class ' + hang.bug_class + ')' : '') : '';
      var tr = el('tr', {'data-request-id': r.id, 'data-node': r.node, 'data-group': r.group,
        'class': (r.hung ? 'hung' : r.anomalies.length ? 'anomalous' : '') + (r.id === state.openId ? ' selected' : '') + (startsGroup ? ' group-start' : '')}, [
        el('td', {'class': 'rid', title: r.id}, [listId(r.id)]),
        el('td', {title: r.node}, [r.node]),
        el('td', {title: r.phase + (r.terminal ? '' : ' (not terminal)')}, [r.phase + (r.terminal ? '' : ' \u2026')]),
        el('td', {'class': 'dur', title: r.terminal ? 'admission to ' + r.phase : 'open since admission'}, [secs(r.dur) + (r.terminal ? '' : '+')]),
        el('td', {'class': 'finding', title: hang ? findingText + ': ' + hang.message : ''}, [findingText]),
        el('td', {'class': 'anomaly', title: r.anomalies.join(', ')}, [r.anomalies.join(', ')]),
        tidCell
      ]);
      tr.addEventListener('click', function () { location.hash = 'request=' + encodeURIComponent(r.id); });
      tbody.appendChild(tr);
    });
    $('#count').textContent = shown + ' of ' + state.rows.length;
    var nf = $('#node-findings');
    nf.textContent = '';
    state.findings.filter(function (f) { return !f.request_id; }).forEach(function (f) {
      nf.appendChild(el('div', {'class': 'finding-line'}, [f.node + ': ' + f.detector + ': ' + f.message]));
    });
  }

  // ------------------------------------------------------------------ one request

  function openRequest(id) {
    state.openId = id;
    Array.prototype.forEach.call(document.querySelectorAll('#requests tbody tr'), function (tr) {
      tr.classList.toggle('selected', tr.getAttribute('data-request-id') === id);
    });
    return api('/v1/requests/' + encodeURIComponent(id)).then(function (tl) {
      if (state.openId !== id) { return; }
      var findings = tl.findings;
      if (!findings) {
        var rids = set(tl.request_ids || []), tids = set(tl.transfer_ids || []);
        findings = state.findings.filter(function (f) { return rids[f.request_id] || tids[f.transfer_id]; });
      }
      renderTimeline(tl, findings);
    }).catch(function (e) { showError('cannot load ' + shortId(id) + ': ' + e.message); });
  }

  function sideOf(node, info) {
    var j = info[node] || {};
    if (j.kind === 'proxy') { return 'proxy'; }
    if (j.kind === 'tap') { return 'tap'; }
    return j.role === 'producer' ? 'p' : j.role === 'consumer' ? 'd' : (/^P/i.test(node) ? 'p' : 'd');
  }

  function laneOf(line, info) {
    if (PROXY[line.type]) { return 'proxy'; }
    var side = sideOf(line.node, info);
    if (side === 'proxy') { return 'proxy'; }
    if (side === 'tap' || WIRE[line.type]) { return 'wire'; }
    var worker = WORKER[line.type] || (line.kind === 'effect' && WORKER[line.cause]);
    return side + (worker ? '-worker' : '-sched');
  }

  function findingLane(f, info) {
    var side = sideOf(f.node, info);
    var where = FINDING_LANE[f.detector];
    if (side === 'proxy') { return 'proxy'; }
    if (where === 'wire' || side === 'tap') { return 'wire'; }
    return side + (where === 'worker' ? '-worker' : '-sched');
  }

  function renderTimeline(tl, findings) {
    state.timeline = tl;
    $('#timeline-panel').classList.add('open');
    state.view = {k: 1, off: 0};
    var info = {};
    Object.keys(state.nodeInfo).forEach(function (k) { info[k] = state.nodeInfo[k]; });
    (tl.journals || []).forEach(function (j) { info[j.node] = j; });
    var lines = tl.lines || [];
    // A journal that wrote proxy records is a proxy's (a proxy is not replayed, so it has no role).
    lines.forEach(function (l) { if (PROXY[l.type] && !(info[l.node] || {}).role) { info[l.node] = {node: l.node, kind: 'proxy'}; } });
    var nodes = [];
    lines.forEach(function (l) { if (nodes.indexOf(l.node) < 0) { nodes.push(l.node); } });
    (tl.journals || []).forEach(function (j) { if (nodes.indexOf(j.node) < 0) { nodes.push(j.node); } });
    var color = {};
    nodes.forEach(function (n, i) { color[n] = NODE_COLORS[i % NODE_COLORS.length]; });

    // Header and findings.
    var head = $('#timeline-head');
    head.textContent = '';
    head.appendChild(document.createTextNode((tl.kind || 'request') + ' '));
    head.appendChild(el('span', {'class': 'rid', title: tl.query}, [shortId((tl.request_ids || [tl.query])[0])]));
    (tl.requests || []).forEach(function (leg) {
      head.appendChild(el('div', {'class': 'rid'}, ['  ' + leg.node + ': ' + leg.request_id]));
    });
    (tl.transfer_ids || []).forEach(function (t) {
      var b = el('button', {type: 'button', 'class': 'xfer-open', 'data-tid': t, title: 'the transfer across nodes: both legs, the frames between them, what is missing'}, ['cross-node view']);
      b.addEventListener('click', function () { renderTransfer(t); });
      head.appendChild(el('div', {'class': 'rid'}, ['  transfer ' + t, b]));
    });
    (tl.end || []).forEach(function (e) {
      head.appendChild(el('div', {}, ['  ' + e.node + ' ends in ' + e.phase + (e.terminal ? '' : ' (not terminal)') + ': ' + e.reason]));
    });
    var fbox = $('#findings');
    fbox.textContent = '';
    findings.forEach(function (f) {
      fbox.appendChild(el('div', {'class': 'finding-line'}, [f.node + '  ' + f.detector + (f.bug_class ? ' (class ' + f.bug_class + ')' : '') + ': ' + f.message]));
    });
    state.legendText = $('#legend').textContent = 'lines: ' + lines.length + (tl.truncated ? ' (truncated)' : '') + ' \u00b7 nodes: '
      + nodes.map(function (n) { var j = info[n] || {}; return n + ' (' + (j.kind === 'proxy' ? 'proxy' : (j.role || '?') + ', ' + (j.mode || '?')) + ')'; }).join(', ')
      + ' \u00b7 \u25cf input event  \u25c6 decision  \u2192 frame across nodes  \u2503 deadline  \u2b1a missing event (hang finding)'
      + ' \u00b7 the time axis is compressed (long gaps are labelled); wheel or +/- to zoom, drag to pan';
    drawChart(tl, lines, findings, info, color);
    // a refresh of the same request keeps the cross-node view open; another request starts on the timeline
    var keep = state.xfer && state.xfer.query === tl.query && (tl.transfer_ids || []).indexOf(state.xfer.tid) >= 0;
    if (keep) { renderTransfer(state.xfer.tid); } else { closeTransfer(); }
  }

  // ------------------------------------------------------------------ the cross-node view of one transfer

  function closeTransfer() {
    state.xfer = null;
    $('#timeline-panel').classList.remove('xfer-mode');
  }

  // One transfer across nodes as a sequence diagram: a lifeline per node (proxy, prefill, decode),
  // time downwards one row per step (phase changes, frames, posts and completions, anomalies), each
  // frame an arrow from the node that sent it to the node that received it (same transfer id), a
  // frame never received a dashed arrow ending in "?", and each hang finding a box on its node's
  // lifeline saying what is missing.
  var LEG_TYPES = set(['request_routed', 'leg_sent', 'leg_answered', 'leg_failed', 'leg_cancelled', 'request_completed']);
  function renderTransfer(tid) {
    var c = state.chart;
    if (!c) { return; }
    state.xfer = {tid: tid, query: c.tl.query};
    $('#timeline-panel').classList.add('xfer-mode');
    var lines = c.lines, info = c.info, findings = c.findings, color = c.color;
    var base = lines.length ? lines[0].at_ns : 0;
    var nodes = [];
    lines.forEach(function (l) { if (nodes.indexOf(l.node) < 0) { nodes.push(l.node); } });
    (c.tl.journals || []).forEach(function (j) { if (nodes.indexOf(j.node) < 0) { nodes.push(j.node); } });
    var cols = [];
    ['proxy', 'p', 'tap', 'd'].forEach(function (side) {
      nodes.forEach(function (n) { if (sideOf(n, info) === side && cols.indexOf(n) < 0) { cols.push(n); } });
    });
    function ofTransfer(l) { var t = (l.fields || {}).transfer_id; return t === undefined || t === null || t === tid; }
    var steps = [];
    lines.forEach(function (l, idx) {
      var keep = l.phase_to || WIRE[l.type] || LEG_TYPES[l.type] || l.type === 'post_write' || l.type === 'post_read'
        || l.type === 'transfer_completed' || l.type === 'anomaly' || l.type === 'deferral_started' || l.type === 'ack_surfaced';
      if (keep && ofTransfer(l)) { steps.push({kind: 'line', line: l, idx: idx, at: l.at_ns}); }
    });
    // the journals' end: the last line, or a finding made later (a hang is found when the journals end)
    var lastT = lines.length ? lines[lines.length - 1].at_ns : 0;
    findings.forEach(function (f) { if (f.at_ns !== null && f.at_ns !== undefined) { lastT = Math.max(lastT, f.at_ns); } });
    findings.forEach(function (f) {
      if ((f.transfer_id && f.transfer_id !== tid) || f.detector === 'anomaly') { return; }
      steps.push({kind: 'finding', f: f, at: f.at_ns !== null && f.at_ns !== undefined ? f.at_ns : lastT});
    });
    steps.sort(function (a, b) { return a.at - b.at || (a.kind === 'finding') - (b.kind === 'finding'); });

    var svgEl = $('#xfer');
    svgEl.textContent = '';
    var W = Math.max(480, ($('#xfer-wrap').clientWidth || 900) - 18);
    var timeW = 84, top = 44, rowH = 22;
    // the outer columns keep room outside them for their labels
    var longest = 0;
    steps.forEach(function (st) {
      if (st.kind === 'line') { longest = Math.max(longest, textW((st.line.phase_to || st.line.type) + ' (00.000 ms, open)', 10)); }
    });
    var pad = Math.min(longest + 16, (W - timeW) / 3);
    var colX = {};
    cols.forEach(function (n, i) {
      colX[n] = cols.length === 1 ? timeW + (W - timeW) / 2 : timeW + pad + (W - timeW - 2 * pad) * i / (cols.length - 1);
    });
    var height = top + rowH * (steps.length + 1) + 10;
    svgEl.setAttribute('width', W);
    svgEl.setAttribute('height', height);
    svgEl.setAttribute('viewBox', '0 0 ' + W + ' ' + height);
    var defs = svg('defs', {}, svgEl);
    var mk = svg('marker', {id: 'xarrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'}, defs);
    svg('path', {d: 'M 0 0 L 10 5 L 0 10 z', fill: '#7a5af8'}, mk);
    function rowY(i) { return top + rowH * (i + 0.5); }
    // labels go away from the middle of the diagram, so that the frames' labels have it
    var mid = timeW + (W - timeW) / 2;
    function outward(n) { return colX[n] < mid ? -1 : 1; }

    // Columns: the node, its role and mode, and its lifeline.
    cols.forEach(function (n) {
      var j = info[n] || {}, side = sideOf(n, info);
      var sub = side === 'proxy' ? 'proxy' : side === 'tap' ? 'tap' : (side === 'p' ? 'prefill' : 'decode') + (j.mode ? ', ' + j.mode : '');
      svg('text', {'class': 'col-head', x: colX[n], y: 16, 'text-anchor': 'middle', text: n, fill: color[n]}, svgEl);
      svg('text', {'class': 'col-sub', x: colX[n], y: 30, 'text-anchor': 'middle', text: sub}, svgEl);
      svg('line', {'class': 'lifeline', 'data-node': n, x1: colX[n], y1: top - 6, x2: colX[n], y2: height - 6}, svgEl);
    });
    // Each row's time, when it differs from the row above.
    var prevLabel = null;
    steps.forEach(function (st, i) {
      var lab = rel(st.at - base);
      if (lab !== prevLabel) { svg('text', {'class': 'row-time', x: 4, y: rowY(i) + 4, text: lab}, svgEl); }
      prevLabel = lab;
    });
    // Phases: a bar down each lifeline from one phase change to the next.
    var phaseRows = {};
    steps.forEach(function (st, i) { if (st.kind === 'line' && st.line.phase_to) { (phaseRows[st.line.node] = phaseRows[st.line.node] || []).push(i); } });
    Object.keys(phaseRows).forEach(function (n) {
      if (colX[n] === undefined) { return; }
      var rows = phaseRows[n];
      rows.forEach(function (r, k) {
        var l = steps[r].line, last = k === rows.length - 1;
        var open = last && !TERMINAL_PHASES[l.phase_to];
        var y1 = rowY(r) - 4, y2 = last ? (open ? height - 8 : rowY(r) + 4) : rowY(rows[k + 1]) - 4;
        var g = svg('g', {'class': 'phase' + (open ? ' open' : ''), 'data-node': n, 'data-phase': l.phase_to}, svgEl);
        svg('rect', {x: colX[n] - 4, y: y1, width: 8, height: Math.max(4, y2 - y1), fill: PHASE_COLORS[l.phase_to] || '#eaecf0'}, g);
        var d = outward(n);
        var until = last ? (open ? lastT : l.at_ns) : steps[rows[k + 1]].at;
        svg('text', {x: colX[n] + d * 10, y: rowY(r) + 4, 'text-anchor': d < 0 ? 'end' : 'start',
          text: l.phase_to + (last && !open ? '' : ' (' + durationNs(until - l.at_ns) + (open ? ', open' : '') + ')')}, g);
        title(g, n + ' ' + (l.phase_from || '-') + ' \u2192 ' + l.phase_to + ': ' + (l.reason || ''));
      });
    });
    // Frames: sent to received across nodes; a frame never received ends in "?".
    var received = {};
    function peerOf(n) {
      var side = sideOf(n, info), other = side === 'p' ? 'd' : side === 'd' ? 'p' : null;
      var peers = cols.filter(function (m) { return sideOf(m, info) === other; });
      return peers.length ? peers[0] : null;
    }
    steps.forEach(function (st, i) {
      if (st.kind !== 'line') { return; }
      var l = st.line, recv = RECEIVED_AS[l.type];
      if (!recv || colX[l.node] === undefined) { return; }
      var match = -1;
      for (var k = i + 1; k < steps.length && match < 0; k++) {
        var m = steps[k].line;
        if (m && m.type === recv && m.node !== l.node && !received[k] && (m.fields || {}).transfer_id === (l.fields || {}).transfer_id) { match = k; }
      }
      var x1 = colX[l.node], y1 = rowY(i);
      if (match >= 0 && colX[steps[match].line.node] !== undefined) {
        received[match] = true;
        var m2 = steps[match].line, x2 = colX[m2.node], y2 = rowY(match);
        var g = svg('g', {'class': 'frame', 'data-type': l.type, 'data-from': l.node, 'data-to': m2.node}, svgEl);
        svg('path', {d: 'M ' + x1 + ' ' + y1 + ' L ' + (x2 - Math.sign(x2 - x1) * 5) + ' ' + y2}, g);
        svg('text', {x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, 'text-anchor': 'middle', text: l.type.replace(/^send_/, '') + ' (' + durationNs(m2.at_ns - l.at_ns) + ')'}, g);
        title(g, l.node + ' ' + l.type + ' \u2192 ' + m2.node + ' ' + m2.type + ' (transfer ' + tid + ')');
        g.addEventListener('click', function () { showEntry(l, st.idx, base); });
      } else {
        var peer = peerOf(l.node);
        var xp = peer ? colX[peer] : x1 + 120;
        var xe = x1 + (xp - x1) * 0.8;
        var g2 = svg('g', {'class': 'frame lost', 'data-type': l.type, 'data-from': l.node, 'data-to': peer || ''}, svgEl);
        svg('path', {d: 'M ' + x1 + ' ' + y1 + ' L ' + xe + ' ' + (y1 + rowH * 0.4)}, g2);
        svg('circle', {cx: xe, cy: y1 + rowH * 0.4, r: 7}, g2);
        svg('text', {x: xe - 3, y: y1 + rowH * 0.4 + 4, text: '?'}, g2);
        svg('text', {x: (x1 + xe) / 2, y: y1 - 4, 'text-anchor': 'middle', text: l.type.replace(/^send_/, '') + ' never received'}, g2);
        title(g2, l.node + ' ' + l.type + ': no ' + (peer || 'other node') + ' journal received it (transfer ' + tid + ')');
        g2.addEventListener('click', function () { showEntry(l, st.idx, base); });
      }
    });
    // Other steps: a dot on the lifeline, labelled away from the middle.
    steps.forEach(function (st, i) {
      if (st.kind !== 'line') { return; }
      var l = st.line;
      if (l.phase_to || RECEIVED_AS[l.type] || received[i] || colX[l.node] === undefined) { return; }
      var d = outward(l.node);
      var g = svg('g', {'class': 'xev' + (l.type === 'anomaly' ? ' anomaly' : ''), 'data-type': l.type, 'data-node': l.node}, svgEl);
      svg('circle', {cx: colX[l.node], cy: rowY(i), r: 4, fill: color[l.node]}, g);
      var text = l.type === 'anomaly' ? 'anomaly ' + (((l.fields || {}).anomaly || {}).kind || (/anomaly (\S+)/.exec(l.text) || [])[1] || '') : l.type;
      svg('text', {x: colX[l.node] + d * 10, y: rowY(i) + 4, 'text-anchor': d < 0 ? 'end' : 'start', text: text}, g);
      title(g, l.node + ' #' + l.seq + '  ' + (l.kind === 'effect' ? l.cause + ' => ' : '') + l.text);
      g.addEventListener('click', function () { showEntry(l, st.idx, base); });
    });
    // Hang findings: what is missing, on the lifeline where it should have happened.
    steps.forEach(function (st, i) {
      if (st.kind !== 'finding' || colX[st.f.node] === undefined) { return; }
      var f = st.f, x = colX[f.node], d = outward(f.node);
      if (f.detector === 'anomaly') { return; } // its anomaly is a step of its own already
      var what = expected(f, info), missingOne = what !== f.detector;
      var cls = f.detector + (f.bug_class ? ', class ' + f.bug_class : '');
      var msg = f.message || '';
      var l1 = missingOne ? '? missing: ' + what + ' \u2014 ' + cls : '! ' + cls + ': ' + (msg.length > 60 ? msg.slice(0, 57) + '...' : msg);
      var w = Math.min(textW(l1) + 12, W - timeW - 4);
      var x1 = d < 0 ? Math.max(timeW, x + 10 - w) : Math.min(x - 10, W - w - 2);
      var g = svg('g', {'class': missingOne ? 'missing-event' : 'finding-box', 'data-detector': f.detector, 'data-node': f.node}, svgEl);
      svg('rect', {x: x1, y: rowY(i) - 9, width: w, height: 18, rx: 4}, g);
      svg('text', {x: x1 + 6, y: rowY(i) + 4, text: l1}, g);
      title(g, f.node + ' ' + f.detector + (f.bug_class ? ' (class ' + f.bug_class + ')' : '') + ': ' + f.message);
      g.addEventListener('click', function () { $('#entry').textContent = 'hang finding on ' + f.node + '\n' + JSON.stringify(f, null, 2); });
    });
    $('#legend').textContent = 'transfer ' + tid + ' across ' + cols.join(', ') + ' \u00b7 time runs down, one row per step'
      + ' \u00b7 \u2192 frame sent and received  \u21e2? frame never received  \u2b1a missing event (hang finding)';
  }

  // A compressed time axis: every line gets a slot; a gap between two times widens its slot with
  // the logarithm of the gap, so microseconds and minutes both stay readable.
  function gapWidth(ns) { return 16 + 13 * Math.log10(1 + Math.max(0, ns) / 1000); }

  function makeScale(times, x0) {
    var xs = [], x = x0;
    for (var i = 0; i < times.length; i++) {
      if (i > 0) { x += gapWidth(times[i] - times[i - 1]); }
      xs.push(x);
    }
    function at(t) {
      if (times.length === 0) { return x0; }
      if (t <= times[0]) { return xs[0] - (t < times[0] ? gapWidth(times[0] - t) : 0); }
      var last = times.length - 1;
      if (t >= times[last]) { return xs[last] + (t > times[last] ? gapWidth(t - times[last]) : 0); }
      var lo = 0, hi = last;
      while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (times[mid] <= t) { lo = mid; } else { hi = mid; } }
      var span = times[hi] - times[lo];
      return span <= 0 ? xs[lo] : xs[lo] + (xs[hi] - xs[lo]) * (t - times[lo]) / span;
    }
    return {xs: xs, at: at};
  }

  // Where labels go without covering each other: the boxes taken so far; a label takes the first
  // of its candidate places whose box is free.
  function Placer() { this.boxes = []; }
  Placer.prototype.free = function (x1, y1, x2, y2) {
    return !this.boxes.some(function (b) { return x1 < b[2] + 3 && b[0] < x2 + 3 && y1 < b[3] + 1 && b[1] < y2 + 1; });
  };
  Placer.prototype.take = function (x1, x2, tops, h) {
    for (var i = 0; i < tops.length; i++) {
      if (this.free(x1, tops[i], x2, tops[i] + h)) { this.boxes.push([x1, tops[i], x2, tops[i] + h]); return i; }
    }
    return -1;
  };
  function range(n, from, step) { var a = []; for (var i = 0; i < n; i++) { a.push(from + i * step); } return a; }
  function textW(t, px) { return String(t).length * (px || 10) * 0.6; }
  // A time since the first entry (offsetNs).
  function rel(ns) { return offsetNs(ns); }

  // Spans of the proxy's legs: sent to answered (or failed, cancelled) per leg.
  function computeSpans(lines) {
    var open = {}, items = [];
    lines.forEach(function (l, idx) {
      var f = l.fields || {};
      if (!f.leg) { return; }
      var k = l.node + '\u0000' + (f.request_id || '') + '\u0000' + f.leg;
      if (l.type === 'leg_sent') {
        open[k] = {node: l.node, leg: f.leg, from: idx, to: -1, failed: false};
        items.push(open[k]);
      } else if ((l.type === 'leg_answered' || l.type === 'leg_failed' || l.type === 'leg_cancelled') && open[k] && open[k].to < 0) {
        open[k].to = idx; open[k].failed = l.type !== 'leg_answered';
      }
    });
    return items;
  }

  function drawChart(tl, lines, findings, info, color) {
    state.chart = {tl: tl, lines: lines, findings: findings, info: info, color: color};
    renderChart();
  }

  // Zoom by `factor` around the plot's screen x `at` (its middle when not given).
  function zoom(factor, at) {
    var c = state.chart;
    if (!c || !c.geo) { return; }
    var g = c.geo, v = state.view;
    var px = at === undefined ? g.plotL + g.plotW / 2 : at;
    var n = v.off + (px - g.plotL) / (g.fitK * v.k);
    var k = Math.max(1, Math.min(400, v.k * factor));
    state.view = {k: k, off: n - (px - g.plotL) / (g.fitK * k)};
    renderChart();
  }
  function pan(dxScreen) {
    var c = state.chart;
    if (!c || !c.geo) { return; }
    state.view.off -= dxScreen / (c.geo.fitK * state.view.k);
    renderChart();
  }

  function renderChart() {
    var c = state.chart;
    if (!c) { return; }
    var tl = c.tl, lines = c.lines, findings = c.findings, info = c.info, color = c.color;
    var chart = $('#chart');
    chart.textContent = '';
    var wrap = $('#chart-wrap');
    var W = Math.max(420, (wrap.clientWidth || 900) - 2);
    var labelW = 130, top = 34, laneH = 46, rightPad = 16;
    var base = lines.length ? lines[0].at_ns : 0;
    // Extra times the axis must reach: deadlines and findings.
    var deadlines = computeDeadlines(lines, info);
    var extra = [];
    deadlines.forEach(function (d) { extra.push(d.at); });
    findings.forEach(function (f) { if (f.at_ns !== null && f.at_ns !== undefined) { extra.push(f.at_ns); } });
    var times = lines.map(function (l) { return l.at_ns; });
    var scale = makeScale(times, 0);
    var natMax = scale.xs.length ? scale.xs[scale.xs.length - 1] : 0;
    extra.forEach(function (t) { natMax = Math.max(natMax, scale.at(t)); });
    natMax += 24; // room for the last marker
    // The whole timeline fits the plot at zoom 1; the view is a zoom factor and a left edge.
    var plotL = labelW + 14, plotW = W - plotL - rightPad;
    var fitK = plotW / Math.max(1, natMax);
    var v = state.view;
    var visible = natMax / v.k;
    v.off = Math.max(0, Math.min(natMax - visible, v.off));
    c.geo = {plotL: plotL, plotW: plotW, fitK: fitK};
    function sx(n) { return plotL + (n - v.off) * fitK * v.k; }
    var xs = scale.xs.map(sx);
    function xat(t) { return sx(scale.at(t)); }
    var maxX = plotL + plotW;
    $('#zoom-level').textContent = v.k > 1.001 ? 'zoom \u00d7' + (v.k < 10 ? v.k.toFixed(1) : Math.round(v.k)) : 'whole timeline';

    var transfers = computeTransfers(lines);
    var spans = computeSpans(lines);
    var wireRows = Math.max(1, Math.min(6, transfers.rows));
    // Each node's phases are a band under its side's scheduler lane, one band row per node.
    var bandRow = {}, perSide = {};
    (tl.journals || []).map(function (j) { return j.node; }).concat(lines.map(function (l) { return l.node; })).forEach(function (n) {
      if (bandRow[n] === undefined) {
        var side = sideOf(n, info);
        bandRow[n] = perSide[side] = (perSide[side] === undefined ? 0 : perSide[side] + 1);
      }
    });
    function bandLane(node) { var side = sideOf(node, info); return side === 'proxy' ? 'proxy' : side === 'tap' ? 'wire' : side + '-sched'; }
    var legRows = {};
    spans.forEach(function (sp) { if (legRows[sp.leg] === undefined) { legRows[sp.leg] = Object.keys(legRows).length; } });
    var nLegRows = Object.keys(legRows).length;
    // Which lanes hold something: events, transfers, spans, deadlines, findings.
    var used = {};
    lines.forEach(function (l) { used[laneOf(l, info)] = true; });
    if (transfers.items.length) { used.wire = true; }
    if (spans.length) { used.proxy = true; }
    findings.forEach(function (f) { used[findingLane(f, info)] = true; });
    // A lane with findings gets rows for their labels.
    var findingsIn = {};
    findings.forEach(function (f) { var l = findingLane(f, info); findingsIn[l] = (findingsIn[l] || 0) + 1; });
    var laneY = {}, laneHeight = {}, y = top;
    LANES.forEach(function (l) {
      laneY[l.id] = y;
      var side = l.id === 'proxy' ? 'proxy' : l.id.slice(0, 1);
      var bands = /-sched$|^proxy$/.test(l.id) && perSide[side] ? perSide[side] : 0;
      var h = laneH + 13 * bands + (findingsIn[l.id] > 1 ? 26 * (Math.min(8, findingsIn[l.id]) - 1) : 0);
      if (l.id === 'wire') { h += 12 * wireRows; }
      if (l.id === 'proxy') { h += 13 * nLegRows; }
      laneHeight[l.id] = used[l.id] ? h : 36;
      y += laneHeight[l.id];
    });
    var height = y + 6;
    chart.setAttribute('width', W);
    chart.setAttribute('height', height);
    chart.setAttribute('viewBox', '0 0 ' + W + ' ' + height);
    var defs = svg('defs', {}, chart);
    var marker = svg('marker', {id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse'}, defs);
    svg('path', {d: 'M 0 0 L 10 5 L 0 10 z', fill: '#7a5af8'}, marker);
    var clip = svg('clipPath', {id: 'plot-clip'}, defs);
    svg('rect', {x: plotL - 10, y: 0, width: plotW + rightPad + 10, height: height}, clip);

    LANES.forEach(function (l, i) {
      svg('rect', {'class': 'lane-bg' + (i % 2 ? ' odd' : ''), x: 0, y: laneY[l.id], width: W, height: laneHeight[l.id], 'data-lane': l.id}, chart);
    });
    var plot = svg('g', {'class': 'plot', 'clip-path': 'url(#plot-clip)'}, chart);
    var placer = new Placer();

    // Axis: relative times at the events (never the same text twice in a row), and the long gaps
    // the compression hides.
    var lastLabelX = -1e9, lastText = null;
    for (var i = 0; i < lines.length; i++) {
      var gap = i > 0 ? lines[i].at_ns - lines[i - 1].at_ns : 0;
      if (gap >= 1e8) {
        var gx = (xs[i - 1] + xs[i]) / 2, gt = '\u2248' + durationNs(gap);
        svg('line', {x1: gx, x2: gx, y1: top, y2: height, stroke: '#e4e7ec', 'stroke-dasharray': '2 4'}, plot);
        if (placer.take(gx - textW(gt) / 2, gx + textW(gt) / 2, [top - 14], 12) === 0) {
          svg('text', {'class': 'gap', x: gx, y: top - 4, 'text-anchor': 'middle', text: gt}, plot);
        }
      }
      if (xs[i] < plotL - 4 || xs[i] > maxX + 4) { continue; }
      var text = rel(lines[i].at_ns - base);
      if (text !== lastText && xs[i] - lastLabelX > textW(text) + 12) {
        svg('text', {'class': 'axis', x: xs[i], y: 12, 'text-anchor': 'middle', text: text}, plot);
        placer.boxes.push([xs[i] - textW(text) / 2, 2, xs[i] + textW(text) / 2, 14]);
        lastLabelX = xs[i];
        lastText = text;
      }
    }

    // Phase bands at the bottom of each node's scheduler lane, with how long each phase lasted.
    var bands = {};
    lines.forEach(function (l, idx) {
      if (l.phase_to) {
        var k = l.node + '\u0000' + ((l.fields || {}).request_id || '');
        (bands[k] = bands[k] || []).push({x: xs[idx], at: l.at_ns, phase: l.phase_to, node: l.node});
      }
    });
    var lastT = lines.length ? lines[lines.length - 1].at_ns : 0;
    Object.keys(bands).forEach(function (k) {
      var list = bands[k];
      list.forEach(function (b, j) {
        var next = list[j + 1];
        var x2 = next ? next.x : Math.max(b.x + 20, xat(lastT) + 20);
        var lane = bandLane(b.node);
        if (laneY[lane] === undefined) { return; }
        // the bands sit at the bottom of the lane (above the proxy's leg spans), one row per node
        var by = laneY[lane] + laneHeight[lane] - 14 - 13 * ((perSide[sideOf(b.node, info)] || 0) - (bandRow[b.node] || 0))
          - (lane === 'proxy' ? 13 * nLegRows : 0);
        var g = svg('g', {'class': 'phase-band', 'data-node': b.node, 'data-phase': b.phase}, plot);
        svg('rect', {x: b.x, y: by, width: Math.max(2, x2 - b.x), height: 12, fill: PHASE_COLORS[b.phase] || '#eaecf0'}, g);
        var dur = next ? durationNs(next.at - b.at) : TERMINAL_PHASES[b.phase] ? '' : '\u2265 ' + durationNs(lastT - b.at);
        var label = b.phase + (dur ? ' \u00b7 ' + dur : '') + ' (' + b.node + ')';
        var fits = fitText([label, b.phase + (dur ? ' \u00b7 ' + dur : ''), b.phase], x2 - b.x - 6);
        if (fits) { svg('text', {x: Math.max(b.x, plotL) + 3, y: by + 9, text: fits}, g); }
        title(g, label);
      });
    });

    // The proxy's legs: sent to answered, with their duration.
    spans.forEach(function (sp) {
      var x1 = xs[sp.from], x2 = sp.to >= 0 ? xs[sp.to] : xat(lastT) + 20;
      var yy = laneY.proxy + laneHeight.proxy - 14 - 13 * (nLegRows - 1 - legRows[sp.leg]);
      var g = svg('g', {'class': 'span' + (sp.to < 0 ? ' open' : sp.failed ? ' failed' : ''), 'data-leg': sp.leg}, plot);
      svg('rect', {x: x1, y: yy, width: Math.max(3, x2 - x1), height: 11, rx: 2}, g);
      var dur = sp.to >= 0 ? durationNs(lines[sp.to].at_ns - lines[sp.from].at_ns) : 'no answer';
      var fits = fitText([sp.leg + ' leg \u00b7 ' + dur, sp.leg + ' ' + dur, dur], x2 - x1 - 4);
      if (fits) { svg('text', {x: x1 + 3, y: yy + 9, text: fits}, g); }
      title(g, sp.node + ' ' + sp.leg + ' leg: ' + dur + (sp.failed ? ' (' + lines[sp.to].type + ')' : ''));
    });

    // Transfers: post -> completion bars in the wire lane.
    transfers.items.forEach(function (t) {
      var x1 = xs[t.from], x2 = t.to >= 0 ? xs[t.to] : xat(lastT) + 20;
      var row = Math.min(t.row, wireRows - 1);
      var g = svg('g', {'class': 'transfer' + (t.to < 0 ? ' open' : t.failed ? ' failed' : '')}, plot);
      var yy = laneY.wire + laneHeight.wire - 12 * (wireRows - row) - 2;
      svg('rect', {x: x1, y: yy, width: Math.max(3, x2 - x1), height: 10, rx: 2}, g);
      var dur = t.to >= 0 ? durationNs(lines[t.to].at_ns - lines[t.from].at_ns) : 'no completion';
      var fits = fitText([t.node + ' #' + t.status + ' ' + dur, dur], x2 - x1 - 4, 9);
      if (fits) { svg('text', {x: x1 + 3, y: yy + 8, text: fits}, g); }
      title(g, t.node + ' ' + lines[t.from].type + ' status ' + t.status + ': ' + dur + (t.failed ? ' (FAILED)' : ''));
    });

    // Hang findings: a dashed box where the missing event should have been, its label in a row
    // of its own when another finding's is there already.
    var lanesSeen = {};
    findings.forEach(function (f) {
      var lane = findingLane(f, info);
      if (laneY[lane] === undefined) { return; }
      var end = f.at_ns !== null && f.at_ns !== undefined ? f.at_ns : lastT;
      if (f.detector === 'anomaly') {
        var ga = svg('g', {'class': 'finding-anomaly', 'data-detector': f.detector}, plot);
        svg('circle', {cx: xat(end), cy: laneY[lane] + 22, r: 10}, ga);
        title(ga, f.node + ' ' + f.detector + ': ' + f.message);
        return;
      }
      var start = f.since_ns !== null && f.since_ns !== undefined ? f.since_ns : end;
      var x1 = xat(start), x2 = Math.max(xat(end), x1 + 24);
      var l1 = 'missing: ' + expected(f, info), l2 = f.detector + (f.bug_class ? ', class ' + f.bug_class : '') + ' (' + f.node + ')';
      var w = Math.max(textW(l1), textW(l2));
      // the label goes right of the marker, else inside the box left of it, else left of the box,
      // else at the plot's left edge: never out of sight
      var right = x2 + 12 + w <= maxX;
      var lx = right ? x2 + 12 : x2 - 12 - w >= Math.max(x1, plotL) ? x2 - 12 - w : x1 - 6 - w >= plotL ? x1 - 6 - w : plotL + 2;
      var tops = range(Math.max(1, Math.min(8, findingsIn[lane])), laneY[lane] + 6, 26);
      var row = placer.take(Math.min(lx, x1), Math.max(lx + w, x2 + 8), tops, 24);
      if (row < 0) { row = (lanesSeen[lane] = (lanesSeen[lane] || 0) + 1) % tops.length; }
      var yy = tops[row];
      var g = svg('g', {'class': 'missing-event', 'data-detector': f.detector, 'data-node': f.node}, plot);
      svg('rect', {x: x1, y: yy, width: x2 - x1, height: 24, rx: 4}, g);
      svg('circle', {cx: x2, cy: yy + 12, r: 8}, g);
      svg('text', {x: x2 - 3, y: yy + 16, text: '?'}, g);
      svg('text', {x: right ? lx : lx + w, y: yy + 10, 'text-anchor': right ? 'start' : 'end', text: l1}, g);
      svg('text', {x: right ? lx : lx + w, y: yy + 22, 'text-anchor': right ? 'start' : 'end', text: l2}, g);
      title(g, f.node + ' ' + f.detector + (f.bug_class ? ' (class ' + f.bug_class + ')' : '') + ': ' + f.message);
      g.addEventListener('click', function () {
        $('#entry').textContent = 'hang finding on ' + f.node + '\n' + JSON.stringify(f, null, 2);
      });
    });
    // Deadlines: their labels take rows of their own so that two close deadlines stay readable.
    deadlines.forEach(function (d) {
      var side = sideOf(d.node, info);
      var lanes = side === 'proxy' ? ['proxy'] : [side + '-sched', side + '-worker'];
      var y1 = Math.min.apply(null, lanes.map(function (l) { return laneY[l]; }));
      var y2 = Math.max.apply(null, lanes.map(function (l) { return laneY[l] + laneHeight[l]; }));
      var x = xat(d.at);
      var g = svg('g', {'class': 'deadline', 'data-deadline': d.kind, 'data-node': d.node}, plot);
      svg('line', {x1: x, x2: x, y1: y1, y2: y2}, g);
      var w = textW(d.label), right = x + 3 + w <= maxX;
      var lx1 = right ? x + 3 : x - 3 - w;
      var tops = range(6, y1 + 1, 13);
      var r = placer.take(lx1, lx1 + w, tops, 12);
      if (r >= 0) { svg('text', {x: right ? x + 3 : x - 3, y: tops[r] + 9, 'text-anchor': right ? 'start' : 'end', text: d.label}, g); }
      title(g, d.node + ' ' + d.label + ' at ' + rel(d.at - base) + ': ' + d.why);
    });

    // Events.
    var pos = [];
    var stackAt = {};
    lines.forEach(function (l, idx) {
      var lane = laneOf(l, info);
      var k = lane + '@' + Math.round(xs[idx]);
      var n = stackAt[k] = (stackAt[k] || 0) + 1;
      var cy = laneY[lane] + 22 + ((n - 1) % 2) * 6;
      pos.push({x: xs[idx], y: cy, lane: lane});
      var shape;
      var attrs = {'class': 'ev', 'data-index': idx, 'data-type': l.type, 'data-node': l.node, 'data-lane': lane, fill: color[l.node]};
      if (l.kind === 'input') {
        attrs.cx = xs[idx]; attrs.cy = cy; attrs.r = 5;
        shape = svg('circle', attrs, plot);
      } else {
        attrs.x = xs[idx] - 4; attrs.y = cy - 4; attrs.width = 8; attrs.height = 8;
        attrs.transform = 'rotate(45 ' + xs[idx] + ' ' + cy + ')';
        if (l.type === 'anomaly') { attrs.fill = '#d92d20'; }
        shape = svg('rect', attrs, plot);
      }
      title(shape, rel(l.at_ns - base) + '  ' + l.node + ' #' + l.seq + '  '
        + (l.kind === 'effect' ? l.cause + ' => ' : '') + l.text);
      shape.addEventListener('click', function () { showEntry(l, idx, base); });
    });

    // Cross-node frames: a sent effect to the frame the other node received (same transfer id).
    lines.forEach(function (l, idx) {
      var recv = RECEIVED_AS[l.type];
      var tid = (l.fields || {}).transfer_id;
      if (!recv || !tid) { return; }
      for (var j = idx + 1; j < lines.length; j++) {
        var m = lines[j];
        if (m.type === recv && m.node !== l.node && (m.fields || {}).transfer_id === tid) {
          var a = pos[idx], b = pos[j];
          var midY = Math.min(a.y, b.y) - 14;
          title(svg('path', {'class': 'xlink', d: 'M ' + a.x + ' ' + a.y + ' C ' + a.x + ' ' + midY + ', ' + b.x + ' ' + midY + ', ' + (b.x - 5) + ' ' + b.y}, plot),
            l.node + ' ' + l.type + ' \u2192 ' + m.node + ' ' + m.type + ' (transfer ' + tid + ')');
          break;
        }
      }
    });

    // The lane labels, over a column of their own that the plot scrolls under.
    svg('rect', {'class': 'label-col', x: 0, y: top, width: plotL - 10, height: height - top}, chart);
    LANES.forEach(function (l, i) {
      svg('rect', {'class': 'lane-bg' + (i % 2 ? ' odd' : ''), x: 0, y: laneY[l.id], width: plotL - 10, height: laneHeight[l.id]}, chart);
      svg('text', {'class': 'lane-label' + (used[l.id] ? '' : ' empty'), x: 6, y: laneY[l.id] + 16, text: l.label}, chart);
      if (!used[l.id]) {
        svg('text', {'class': 'lane-label empty', x: 6, y: laneY[l.id] + 30, text: l.id === 'proxy' ? '(no proxy journal)' : '(no events)'}, chart);
      }
    });
  }

  // The longest of the texts that fits `room` pixels, or null.
  function fitText(texts, room, px) {
    for (var i = 0; i < texts.length; i++) { if (textW(texts[i], px) <= room) { return texts[i]; } }
    return null;
  }

  // What a detector says did not happen, in a few words (the finding's message says more).
  function expected(f, info) {
    var j = info[f.node] || {};
    switch (f.detector) {
      case 'stuck-waiting': return j.mode === 'write' ? 'write_done' : 'transfer completion';
      case 'handshake-incomplete': return 'handshake_completed';
      case 'handshake-vote-waiting': return 'handshake_voted (every TP rank done handshaking)';
      case 'handshake-vote-failed': return 'a passing TP-wide handshake vote';
      case 'reaped-without-ack': return 'release (ACK) before defer_timeout';
      case 'stuck': return 'next phase change';
      case 'failed-read-no-release': return 'release after the failed read';
      case 'ack-deficit': return 'ACKs from every TP rank';
      default: return f.detector;
    }
  }

  function computeTransfers(lines) {
    var open = {}, items = [];
    lines.forEach(function (l, idx) {
      var f = l.fields || {};
      if ((l.type === 'post_write' || l.type === 'post_read') && f.status_id !== undefined) {
        var t = {node: l.node, status: f.status_id, from: idx, to: -1, failed: false, row: 0};
        open[l.node + '#' + f.status_id] = t;
        items.push(t);
      } else if (l.type === 'transfer_completed' && f.status_id !== undefined) {
        var o = open[l.node + '#' + f.status_id];
        if (o && o.to < 0) { o.to = idx; o.failed = f.succeeded === false; }
      }
    });
    // Greedy rows so that overlapping transfers do not hide each other.
    var ends = [];
    items.forEach(function (t) {
      var end = t.to >= 0 ? t.to : Infinity;
      for (var r = 0; r < ends.length; r++) { if (ends[r] < t.from) { break; } }
      ends[r] = end;
      t.row = r;
    });
    return {items: items, rows: ends.length};
  }

  function computeDeadlines(lines, info) {
    var out = [], firstPost = {};
    lines.forEach(function (l) {
      var f = l.fields || {};
      if (l.type === 'deferral_started' && f.deadline_ns) {
        out.push({node: l.node, at: f.deadline_ns, kind: 'deferral', label: 'deferral deadline (defer_timeout)',
          why: 'the producer frees the blocks without an ACK past this'});
      } else if (l.type === 'ack_parked' && f.deadline_ns) {
        out.push({node: l.node, at: f.deadline_ns, kind: 'parked-ack', label: 'parked ACK deadline',
          why: 'a parked early ACK is dropped past this'});
      } else if ((l.type === 'post_write' || l.type === 'post_read') && !firstPost[l.node]) {
        firstPost[l.node] = l;
      }
    });
    Object.keys(firstPost).forEach(function (node) {
      var l = firstPost[node], j = info[node] || {};
      if (l.type === 'post_write' && j.transfer_timeout_ns) {
        out.push({node: node, at: l.at_ns + j.transfer_timeout_ns, kind: 'transfer', label: 'transfer deadline (transfer_timeout)',
          why: 'transfer_timeout after the first write was posted: a write still waiting for its statuses fails'});
      }
      if (l.type === 'post_read' && j.recv_abort_timeout_ns) {
        out.push({node: node, at: l.at_ns + j.recv_abort_timeout_ns, kind: 'receive-abort', label: 'receive abort (recv_abort_timeout)',
          why: 'recv_abort_timeout after the first read was posted: a read still in flight is aborted'});
      }
    });
    return out;
  }

  function showEntry(l, idx, base) {
    Array.prototype.forEach.call(document.querySelectorAll('#chart .ev.selected'), function (e) { e.classList.remove('selected'); });
    var shape = document.querySelector('#chart .ev[data-index="' + idx + '"]');
    if (shape) { shape.classList.add('selected'); }
    var entry = {node: l.node, seq: l.seq, kind: l.kind === 'input' ? 'input' : 'derived', type: l.type, at_ns: l.at_ns};
    if (l.cause) { entry.cause = l.cause; }
    Object.keys(l.fields || {}).forEach(function (k) { entry[k] = l.fields[k]; });
    $('#entry').textContent = rel(l.at_ns - base) + '  ' + l.node + ' #' + l.seq + '  '
      + (l.kind === 'effect' ? l.cause + ' => ' : '') + l.text
      + (l.phase_to ? '\nphase ' + (l.phase_from || '-') + ' -> ' + l.phase_to + ': ' + l.reason : '')
      + '\n\njournal entry:\n' + JSON.stringify(entry, null, 2);
  }

  // ------------------------------------------------------------------ live updates

  // Server-sent events read through fetch (an EventSource cannot send the bearer token).
  function follow() {
    var gen = ++state.followGen;
    var headers = {Accept: 'text/event-stream'};
    if (state.token) { headers.Authorization = 'Bearer ' + state.token; }
    fetch('/v1/events', {headers: headers, cache: 'no-store'}).then(function (r) {
      if (!r.ok || !r.body) {
        setLive(false, r.status === 404 ? 'journals (not live)' : 'no event stream (' + r.status + ')');
        if (r.status !== 404) { setTimeout(function () { if (gen === state.followGen) { follow(); } }, 5000); }
        return;
      }
      var reader = r.body.getReader(), decoder = new TextDecoder(), buf = '';
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) { throw new Error('stream ended'); }
          if (gen !== state.followGen) { reader.cancel(); return null; }
          buf += decoder.decode(chunk.value, {stream: true});
          var cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            onMessage(buf.slice(0, cut));
            buf = buf.slice(cut + 2);
          }
          return pump();
        });
      }
      return pump();
    }).catch(function () {
      if (gen !== state.followGen) { return; }
      setLive(false, 'reconnecting');
      setTimeout(function () { if (gen === state.followGen) { follow(); } }, 3000);
    });
  }

  function onMessage(block) {
    var type = 'message';
    block.split('\n').forEach(function (line) { if (line.indexOf('event:') === 0) { type = line.slice(6).trim(); } });
    if (type === 'ready') { setLive(true); scheduleRefresh(); }
    if (type === 'entry' || type === 'dropped') { state.events++; setLive(true); scheduleRefresh(); }
  }

  function setLive(on, text) {
    state.live = on;
    var b = $('#live-status');
    b.className = 'badge ' + (on ? 'on' : 'off');
    b.textContent = on ? 'live \u00b7 ' + state.events + ' event(s)' : text || 'not live';
  }

  // At most one refresh a second, and one trailing refresh after a burst.
  function scheduleRefresh() {
    if (state.refreshTimer) { return; }
    var wait = Math.max(0, 1000 - (Date.now() - state.lastRefresh));
    state.refreshTimer = setTimeout(function () {
      state.refreshTimer = null;
      loadList().then(function () { if (state.openId) { openRequest(state.openId); } });
    }, wait);
  }

  // ------------------------------------------------------------------ start

  // The hash holds the open request (#request=ID) and, once, the token (#token=T): the token is
  // kept in the session's storage and taken out of the address.
  function route() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ''));
    var fresh = false;
    if (p.get('token')) {
      fresh = p.get('token') !== state.token;
      state.token = p.get('token');
      try { sessionStorage.setItem('kvledger-token', state.token); } catch (e) { /* private mode */ }
      p.delete('token');
      history.replaceState(null, '', location.pathname + location.search + (p.toString() ? '#' + p.toString() : ''));
    }
    var id = p.get('request');
    if (id) { openRequest(id); }
    return fresh;
  }

  function onHashChange() {
    if (route()) {
      // A new token: read everything again and follow the events with it.
      loadList();
      if (!state.live) { follow(); }
    }
  }

  // Zoom (buttons, the wheel around the pointer), pan (dragging; Shift+wheel), refit on resize.
  function wireChartControls() {
    $('#zoom-in').addEventListener('click', function () { zoom(2); });
    $('#zoom-out').addEventListener('click', function () { zoom(0.5); });
    $('#zoom-fit').addEventListener('click', function () { state.view = {k: 1, off: 0}; renderChart(); });
    $('#xfer-back').addEventListener('click', function () { closeTransfer(); $('#legend').textContent = state.legendText || ''; renderChart(); });
    var wrap = $('#chart-wrap');
    wrap.addEventListener('wheel', function (ev) {
      if (!state.chart) { return; }
      ev.preventDefault();
      var x = ev.clientX - wrap.getBoundingClientRect().left;
      if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) { pan(-(ev.deltaX || ev.deltaY)); return; }
      zoom(Math.pow(1.0015, -ev.deltaY), x);
    }, {passive: false});
    var drag = null;
    wrap.addEventListener('pointerdown', function (ev) { drag = {x: ev.clientX, moved: false}; });
    window.addEventListener('pointermove', function (ev) {
      if (!drag) { return; }
      var dx = ev.clientX - drag.x;
      if (!drag.moved && Math.abs(dx) < 4) { return; }
      drag.moved = true;
      wrap.classList.add('panning');
      drag.x = ev.clientX;
      pan(dx);
    });
    window.addEventListener('pointerup', function () { drag = null; wrap.classList.remove('panning'); });
    var pending = null;
    window.addEventListener('resize', function () {
      if (pending) { return; }
      pending = setTimeout(function () { pending = null; if (state.xfer) { renderTransfer(state.xfer.tid); } else { renderChart(); } }, 100);
    });
  }

  function start() {
    wireChartControls();
    var embedded = document.getElementById('kvledger-data');
    if (embedded) {
      state.standalone = true;
      document.body.classList.add('standalone');
      var data = JSON.parse(embedded.textContent);
      $('#source').textContent = 'kvledger inspect --html \u00b7 ' + (data.journals || []).map(function (j) { return j.node; }).join(', ');
      $('#live-status').textContent = 'saved file';
      renderTimeline(data, data.findings || []);
      return;
    }
    try { state.token = sessionStorage.getItem('kvledger-token'); } catch (e) { state.token = null; }
    ['#search', '#hung-only', '#phase-filter', '#class-filter', '#node-filter'].forEach(function (s) {
      $(s).addEventListener(s === '#search' ? 'input' : 'change', renderList);
    });
    Array.prototype.forEach.call(document.querySelectorAll('#requests th[data-sort]'), function (th) {
      th.addEventListener('click', function () { onSort(th.getAttribute('data-sort')); });
    });
    window.addEventListener('hashchange', onHashChange);
    route();
    loadList().then(function () { follow(); });
  }

  start();
})();
