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
  var PHASE_COLORS = {ADMITTED: '#e0eaff', PREFILLING: '#d1e9ff', WAITING_FOR_REMOTE_KVS: '#fef0c7',
    DEFERRED_FREE: '#fdead7', FINISHED: '#d3f8df', FREED_AFTER_ACK: '#d3f8df', REAPED: '#fee4e2'};

  var state = {
    token: null, rows: [], findings: [], nodeInfo: {}, live: false, events: 0, openId: null,
    timeline: null, refreshTimer: null, lastRefresh: 0, inFlight: false, standalone: false, followGen: 0
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
  function secs(s) {
    if (s === null || s === undefined) { return ''; }
    if (s < 1) { return (s * 1000).toFixed(1) + ' ms'; }
    if (s < 120) { return s.toFixed(2) + ' s'; }
    return (s / 60).toFixed(1) + ' min';
  }
  function showError(msg) { $('#error').textContent = msg || ''; }

  // ------------------------------------------------------------------ data

  function api(path) {
    var headers = {};
    if (state.token) { headers.Authorization = 'Bearer ' + state.token; }
    return fetch(path, {headers: headers, cache: 'no-store'}).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (!r.ok) { var e = new Error(body.error || (r.status + ' ' + r.statusText)); e.status = r.status; throw e; }
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
        return {
          node: node, id: r.request_id, phase: r.phase, terminal: r.terminal, age: r.age_s, tid: r.transfer_id,
          anomalies: anomalies, findings: fs, hung: hangFindings.length > 0 || (!r.terminal && fs.length > 0)
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

  function renderList() {
    var q = $('#search').value.trim().toLowerCase();
    var hungOnly = $('#hung-only').checked, phase = $('#phase-filter').value;
    var cls = $('#class-filter').value, node = $('#node-filter').value;
    var tbody = $('#requests tbody');
    tbody.textContent = '';
    var shown = 0;
    state.rows.forEach(function (r) {
      if (hungOnly && !r.hung) { return; }
      if (phase && r.phase !== phase) { return; }
      if (node && r.node !== node) { return; }
      if (cls && !r.findings.some(function (f) { return String(f.bug_class) === cls; })) { return; }
      if (q) {
        var hay = [r.id, r.tid || '', r.node, r.phase, r.anomalies.join(' ')]
          .concat(r.findings.map(function (f) { return f.detector + ' ' + f.message; })).join(' ').toLowerCase();
        if (hay.indexOf(q) < 0) { return; }
      }
      shown++;
      var hang = r.findings.filter(function (f) { return f.detector !== 'anomaly'; })[0];
      var tidCell = el('td', {}, []);
      if (r.tid) {
        var a = el('a', {href: '#', 'class': 'tid', title: 'every request with this transfer id, on every node'}, [r.tid]);
        a.addEventListener('click', function (ev) {
          ev.preventDefault(); ev.stopPropagation();
          $('#search').value = r.tid; renderList();
        });
        tidCell.appendChild(a);
      }
      var tr = el('tr', {'data-request-id': r.id, 'data-node': r.node, 'class': (r.hung ? 'hung' : '') + (r.id === state.openId ? ' selected' : '')}, [
        el('td', {'class': 'rid', title: r.id}, [shortId(r.id)]),
        el('td', {}, [r.node]),
        el('td', {}, [r.phase + (r.terminal ? '' : ' \u2026')]),
        el('td', {}, [secs(r.age)]),
        el('td', {'class': 'anomaly'}, [el('div', {'class': 'clip'}, [r.anomalies.join(', ')])]),
        el('td', {'class': 'finding', title: hang ? hang.message : ''}, [el('div', {'class': 'clip'}, [hang ? hang.detector + (hang.bug_class ? ' (class ' + hang.bug_class + ')' : '') + ': ' + hang.message : ''])]),
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
    $('#timeline-panel').hidden = false;
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
    (tl.transfer_ids || []).forEach(function (t) { head.appendChild(el('div', {'class': 'rid'}, ['  transfer ' + t])); });
    (tl.end || []).forEach(function (e) {
      head.appendChild(el('div', {}, ['  ' + e.node + ' ends in ' + e.phase + (e.terminal ? '' : ' (not terminal)') + ': ' + e.reason]));
    });
    var fbox = $('#findings');
    fbox.textContent = '';
    findings.forEach(function (f) {
      fbox.appendChild(el('div', {'class': 'finding-line'}, [f.node + '  ' + f.detector + (f.bug_class ? ' (class ' + f.bug_class + ')' : '') + ': ' + f.message]));
    });
    $('#legend').textContent = 'lines: ' + lines.length + (tl.truncated ? ' (truncated)' : '') + ' \u00b7 nodes: '
      + nodes.map(function (n) { var j = info[n] || {}; return n + ' (' + (j.kind === 'proxy' ? 'proxy' : (j.role || '?') + ', ' + (j.mode || '?')) + ')'; }).join(', ')
      + ' \u00b7 \u25cf input event  \u25c6 decision  \u2192 frame across nodes  \u2503 deadline  \u2b1a missing event (hang finding)'
      + ' \u00b7 the time axis is compressed: long gaps are labelled';
    drawChart(tl, lines, findings, info, color);
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

  function drawChart(tl, lines, findings, info, color) {
    var chart = $('#chart');
    chart.textContent = '';
    var labelW = 130, top = 34, laneH = 46;
    var base = lines.length ? lines[0].at_ns : 0;
    // Extra times the axis must reach: deadlines and findings.
    var deadlines = computeDeadlines(lines, info);
    var extra = [];
    deadlines.forEach(function (d) { extra.push(d.at); });
    findings.forEach(function (f) { if (f.at_ns !== null && f.at_ns !== undefined) { extra.push(f.at_ns); } });
    var times = lines.map(function (l) { return l.at_ns; });
    var scale = makeScale(times, labelW + 20);
    var xs = scale.xs.slice(), xat = scale.at;
    var maxX = xs.length ? xs[xs.length - 1] : labelW + 20;
    extra.forEach(function (t) { maxX = Math.max(maxX, xat(t)); });

    var transfers = computeTransfers(lines);
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
    var laneY = {}, laneHeight = {}, y = top;
    LANES.forEach(function (l) {
      laneY[l.id] = y;
      var side = l.id === 'proxy' ? 'proxy' : l.id.slice(0, 1);
      var bands = /-sched$|^proxy$/.test(l.id) && perSide[side] ? perSide[side] : 0;
      laneHeight[l.id] = l.id === 'wire' ? laneH + 12 * wireRows : laneH + 13 * bands;
      y += laneHeight[l.id];
    });
    var width = maxX + 200, height = y + 10;
    chart.setAttribute('width', width);
    chart.setAttribute('height', height);
    var defs = svg('defs', {}, chart);
    var marker = svg('marker', {id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse'}, defs);
    svg('path', {d: 'M 0 0 L 10 5 L 0 10 z', fill: '#7a5af8'}, marker);

    var used = {};
    lines.forEach(function (l) { used[laneOf(l, info)] = true; });
    if (transfers.items.length) { used.wire = true; }
    LANES.forEach(function (l, i) {
      svg('rect', {'class': 'lane-bg' + (i % 2 ? ' odd' : ''), x: 0, y: laneY[l.id], width: width, height: laneHeight[l.id], 'data-lane': l.id}, chart);
      svg('text', {'class': 'lane-label' + (used[l.id] ? '' : ' empty'), x: 6, y: laneY[l.id] + 16, text: l.label}, chart);
      if (!used[l.id]) {
        svg('text', {'class': 'lane-label empty', x: 6, y: laneY[l.id] + 30, text: l.id === 'proxy' ? '(no proxy journal)' : '(no events)'}, chart);
      }
    });

    // Axis: relative times, and the long gaps the compression hides.
    var lastLabel = -1e9;
    for (var i = 0; i < lines.length; i++) {
      var gap = i > 0 ? lines[i].at_ns - lines[i - 1].at_ns : 0;
      if (gap >= 1e8) {
        var gx = (xs[i - 1] + xs[i]) / 2;
        svg('text', {'class': 'gap', x: gx, y: top - 4, 'text-anchor': 'middle', text: '\u2248' + secs(gap / 1e9)}, chart);
        svg('line', {x1: gx, x2: gx, y1: top, y2: height, stroke: '#e4e7ec', 'stroke-dasharray': '2 4'}, chart);
      }
      if (xs[i] - lastLabel > 70) {
        svg('text', {'class': 'axis', x: xs[i], y: 12, 'text-anchor': 'middle', text: 't+' + ((lines[i].at_ns - base) / 1e9).toFixed(3)}, chart);
        lastLabel = xs[i];
      }
    }

    // Phase bands at the bottom of each node's scheduler lane.
    var bands = {};
    lines.forEach(function (l, idx) {
      if (l.phase_to) {
        var k = l.node + '\u0000' + ((l.fields || {}).request_id || '');
        (bands[k] = bands[k] || []).push({x: xs[idx], phase: l.phase_to, node: l.node});
      }
    });
    Object.keys(bands).forEach(function (k) {
      var list = bands[k];
      list.forEach(function (b, j) {
        var x2 = j + 1 < list.length ? list[j + 1].x : maxX + 20;
        var lane = bandLane(b.node);
        if (!laneY[lane]) { return; }
        var by = laneY[lane] + laneH - 14 + 13 * (bandRow[b.node] || 0);
        var g = svg('g', {'class': 'phase-band', 'data-node': b.node}, chart);
        svg('rect', {x: b.x, y: by, width: Math.max(2, x2 - b.x), height: 12,
          fill: PHASE_COLORS[b.phase] || '#eaecf0'}, g);
        var label = b.phase + ' (' + b.node + ')', room = Math.floor((x2 - b.x - 4) / 6);
        if (room >= 3) {
          svg('text', {x: b.x + 3, y: by + 9, text: label.length > room ? label.slice(0, room - 1) + '\u2026' : label}, g);
        }
        title(g, label);
      });
    });

    // Transfers: post -> completion bars in the wire lane.
    transfers.items.forEach(function (t) {
      var x1 = xs[t.from], x2 = t.to >= 0 ? xs[t.to] : maxX + 20;
      var row = Math.min(t.row, wireRows - 1);
      var g = svg('g', {'class': 'transfer' + (t.to < 0 ? ' open' : t.failed ? ' failed' : '')}, chart);
      var yy = laneY.wire + laneH - 8 + row * 12;
      svg('rect', {x: x1, y: yy, width: Math.max(3, x2 - x1), height: 10, rx: 2}, g);
      var dur = t.to >= 0 ? secs((lines[t.to].at_ns - lines[t.from].at_ns) / 1e9) : 'no completion';
      svg('text', {x: x1 + 3, y: yy + 8, text: t.node + ' #' + t.status + ' ' + dur}, g);
      title(g, t.node + ' ' + lines[t.from].type + ' status ' + t.status + ': ' + dur + (t.failed ? ' (FAILED)' : ''));
    });

    // Deadlines.
    deadlines.forEach(function (d) {
      var side = sideOf(d.node, info);
      var lanes = side === 'proxy' ? ['proxy'] : [side + '-sched', side + '-worker'];
      var y1 = Math.min.apply(null, lanes.map(function (l) { return laneY[l]; }));
      var y2 = Math.max.apply(null, lanes.map(function (l) { return laneY[l] + laneHeight[l]; }));
      var x = xat(d.at);
      var g = svg('g', {'class': 'deadline', 'data-deadline': d.kind, 'data-node': d.node}, chart);
      svg('line', {x1: x, x2: x, y1: y1, y2: y2}, g);
      svg('text', {x: x + 3, y: y1 + 10, text: d.label}, g);
      title(g, d.node + ' ' + d.label + ' at t+' + ((d.at - base) / 1e9).toFixed(3) + ' s: ' + d.why);
    });

    // Hang findings: a dashed box where the missing event should have been.
    var lastT = lines.length ? lines[lines.length - 1].at_ns : 0;
    findings.forEach(function (f) {
      var lane = findingLane(f, info);
      if (!laneY[lane]) { return; }
      var end = f.at_ns !== null && f.at_ns !== undefined ? f.at_ns : lastT;
      if (f.detector === 'anomaly') {
        var ga = svg('g', {'class': 'finding-anomaly', 'data-detector': f.detector}, chart);
        svg('circle', {cx: xat(end), cy: laneY[lane] + 22, r: 10}, ga);
        title(ga, f.node + ' ' + f.detector + ': ' + f.message);
        return;
      }
      var start = f.since_ns !== null && f.since_ns !== undefined ? f.since_ns : end;
      var x1 = xat(start), x2 = Math.max(xat(end), x1 + 24);
      var g = svg('g', {'class': 'missing-event', 'data-detector': f.detector, 'data-node': f.node}, chart);
      svg('rect', {x: x1, y: laneY[lane] + 6, width: x2 - x1, height: 30, rx: 4}, g);
      svg('circle', {cx: x2, cy: laneY[lane] + 21, r: 8}, g);
      svg('text', {x: x2 - 3, y: laneY[lane] + 25, text: '?'}, g);
      svg('text', {x: x2 + 12, y: laneY[lane] + 25, text: 'missing: ' + expected(f, info)}, g);
      svg('text', {x: x2 + 12, y: laneY[lane] + 37, text: f.detector + (f.bug_class ? ', class ' + f.bug_class : '')}, g);
      title(g, f.node + ' ' + f.detector + (f.bug_class ? ' (class ' + f.bug_class + ')' : '') + ': ' + f.message);
      g.addEventListener('click', function () {
        $('#entry').textContent = 'hang finding on ' + f.node + '\n' + JSON.stringify(f, null, 2);
      });
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
        shape = svg('circle', attrs, chart);
      } else {
        attrs.x = xs[idx] - 4; attrs.y = cy - 4; attrs.width = 8; attrs.height = 8;
        attrs.transform = 'rotate(45 ' + xs[idx] + ' ' + cy + ')';
        if (l.type === 'anomaly') { attrs.fill = '#d92d20'; }
        shape = svg('rect', attrs, chart);
      }
      title(shape, 't+' + ((l.at_ns - base) / 1e9).toFixed(6) + '  ' + l.node + ' #' + l.seq + '  '
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
          title(svg('path', {'class': 'xlink', d: 'M ' + a.x + ' ' + a.y + ' C ' + a.x + ' ' + midY + ', ' + b.x + ' ' + midY + ', ' + (b.x - 5) + ' ' + b.y}, chart),
            l.node + ' ' + l.type + ' \u2192 ' + m.node + ' ' + m.type + ' (transfer ' + tid + ')');
          break;
        }
      }
    });

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
    $('#entry').textContent = 't+' + ((l.at_ns - base) / 1e9).toFixed(6) + ' s  ' + l.node + ' #' + l.seq + '  '
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

  function start() {
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
    window.addEventListener('hashchange', onHashChange);
    route();
    loadList().then(function () { follow(); });
  }

  start();
})();
