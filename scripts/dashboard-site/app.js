// The dashboard: reads window.LB_INDEX (written by scripts/dashboard: machines, runs, verdicts,
// the overview) and loads a machine's cases month by month (data/<machine>/<month>.js, each calling
// window.LB_LOADED) when they are shown. Fills the machine and thread filters, the overview with
// sparklines, the newest run's verdicts and one card per measured case with Chart.js line charts
// of time (noise band shaded, flagged points marked), throughput and peak memory over the runs,
// labelled with commit and time. Clicking a point opens that run's page at this case.
'use strict';

(function () {
  const I = window.LB_INDEX;
  const PAGE = 30; // cards rendered at a time: a history can hold thousands of cases
  const SHOWN_MONTHS = 3; // months loaded at first; older ones on request
  const RED = '#d62728';
  const GREEN = '#2ca02c';
  let shown = PAGE;
  let M = null; // the machine shown
  const charts = [];
  const points = {}; // machine -> case id -> run index -> point
  const loaded = new Set(); // 'machine/month' files loaded
  const slug = (s) => s.replace(/[^A-Za-z0-9._-]+/g, '_');

  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c);
    return e;
  };
  const fmt = (v, unit) => (v === null || v === undefined ? '—' : `${Number(v.toPrecision(4))} ${unit}`);
  const short = (c) => (c || '?').replace('-dirty', '*').slice(0, 8);
  const runLabel = (r) => [short(r.commit), r.date ? r.date.slice(5, 16).replace('T', ' ') : r.id];

  window.LB_LOADED = (machine, month, parts) => {
    const byCase = (points[machine] ||= {});
    for (const c of parts) {
      const byRun = (byCase[c.id] ||= {});
      for (const p of c.points) byRun[p.run] = p;
    }
    loaded.add(`${machine}/${month}`);
  };

  function load(machine, months) {
    const todo = months.filter((m) => !loaded.has(`${machine.name}/${m}`));
    return Promise.all(todo.map((m) => new Promise((resolve, reject) => {
      const s = el('script', { src: `data/${slug(machine.name)}/${m}.js` });
      s.onload = resolve;
      s.onerror = () => reject(new Error(`cannot load ${s.src}`));
      document.head.append(s);
    })));
  }
  const loadedMonths = () => M.months.filter((m) => loaded.has(`${M.name}/${m}`));
  const visibleRuns = () => M.runs.filter((r) => loaded.has(`${M.name}/${r.month}`));

  function summary() {
    const runs = M.runs;
    const last = runs[runs.length - 1];
    $('summary').textContent = `${M.name}: ${runs.length} runs (${runLabel(runs[0]).join(' ')} … ` +
      `${runLabel(last).join(' ')}), ${M.cases.length} measured cases. Newest: ${last.id}` +
      (last.busy ? ` — busy at the start (${last.busy}).` : '.') +
      (I.dropped ? ` ${I.dropped} older runs are past the retention of ${I.rule.keep_months} months.` : '');
    $('never').textContent = M.never_measured
      ? `${M.never_measured} cases were never measured on this machine (unsupported, failed or out of memory): ` +
        'they have no card; the run pages list them with their reasons.' : '';
    $('months').textContent = `Months shown: ${loadedMonths().join(', ')} of ${M.months.length}.`;
    $('older').hidden = loadedMonths().length === M.months.length;
  }

  function sparkline(series) {
    const w = 120; const h = 28;
    const vals = series.filter((v) => v !== null);
    const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    svg.setAttribute('class', 'spark'); svg.setAttribute('width', w); svg.setAttribute('height', h);
    if (!vals.length) return svg;
    const lo = Math.min(0.9, ...vals); const hi = Math.max(1.1, ...vals);
    const x = (i) => (series.length > 1 ? (i / (series.length - 1)) * (w - 4) + 2 : w / 2);
    const y = (v) => h - 2 - ((v - lo) / (hi - lo)) * (h - 4);
    const line = (d, color, extra = {}) => {
      const p = document.createElementNS('http://www.w3.org/2000/svg', 'path');
      p.setAttribute('d', d); p.setAttribute('stroke', color); p.setAttribute('fill', 'none');
      for (const [k, v] of Object.entries(extra)) p.setAttribute(k, v);
      svg.append(p);
    };
    line(`M0 ${y(1)} H${w}`, '#bbb', { 'stroke-dasharray': '2 2' });
    let d = '';
    series.forEach((v, i) => { if (v !== null) d += `${d ? 'L' : 'M'}${x(i).toFixed(1)} ${y(v).toFixed(1)}`; });
    line(d, '#1f77b4', { 'stroke-width': 1.5 });
    const title = document.createElementNS('http://www.w3.org/2000/svg', 'title');
    title.textContent = series.map((v) => (v === null ? '—' : v.toFixed(3))).join(' ');
    svg.append(title);
    return svg;
  }

  function overview() {
    const body = document.querySelector('#overview tbody');
    body.replaceChildren();
    for (const o of M.overview) {
      const tr = el('tr', { 'data-type': o.type, 'data-backend': o.backend, class: o.regressions ? 'regression' : '' },
        el('td', {}, o.type), el('td', {}, o.backend), el('td', { class: 'num' }, String(o.cases)),
        el('td', { class: 'num' }, o.ratio === null ? '—' : `${o.ratio.toFixed(3)}×`), el('td', {}),
        el('td', { class: 'num' }, String(o.regressions)), el('td', { class: 'num' }, String(o.improvements)),
        el('td', { class: 'num' }, String(o.unjudged)));
      tr.children[4].append(sparkline(o.series));
      body.append(tr);
    }
  }

  function verdicts() {
    const run = M.runs[M.runs.length - 1];
    const regs = M.findings.filter((f) => f.verdict === 'regression');
    const cannot = M.findings.filter((f) => f.verdict === 'cannot judge');
    const body = document.querySelector('#regressions tbody');
    body.replaceChildren();
    for (const r of regs) {
      const link = el('a', { href: `${run.href}#case-${r.case}` }, r.name);
      const jump = el('a', { href: `#case-${r.case}`, class: 'jump', title: 'show its charts' }, '↓');
      const commits = run.commits_url ? el('a', { href: run.commits_url, class: 'commits' },
        `${short(run.prev_commit)}…${short(run.commit)}`) : `${short(run.prev_commit)}…${short(run.commit)}`;
      body.append(el('tr', { class: 'regression' },
        el('td', {}, link, ' ', jump), el('td', {}, r.metric), el('td', {}, fmt(r.value, r.unit)),
        el('td', {}, fmt(r.median, r.unit)), el('td', {}, fmt(r.spread, r.unit)), el('td', {}, fmt(r.limit, r.unit)),
        el('td', {}, `${r.ratio.toFixed(2)}×`), el('td', {}, String(r.runs)), el('td', {}, commits)));
    }
    $('regressions').hidden = !regs.length;
    const ub = document.querySelector('#unjudged tbody');
    ub.replaceChildren();
    for (const r of cannot) {
      ub.append(el('tr', { class: 'cannot' }, el('td', {}, r.name), el('td', {}, r.metric),
        el('td', {}, r.ratio ? `${r.ratio.toFixed(2)}×` : '—'), el('td', {}, r.why)));
    }
    $('unjudged-box').hidden = !cannot.length;
    $('unjudged-summary').textContent = `${cannot.length} changes cannot be judged (why: ` +
      [...new Set(cannot.map((r) => r.why.split(':')[0]))].join(', ') + ')';
    const v = $('verdict');
    // Runs on another CPU under this machine name are not the newest run's history.
    const earlier = M.same_cpu_runs;
    const judged = earlier >= I.rule.min_runs;
    if (M.shift) {
      v.className = 'verdict bad';
      v.textContent = `Run-wide shift: every case ×${M.shift.factor.toFixed(3)} (${M.shift.moved} of ${M.shift.of} ` +
        'cases moved the same way) — a machine change, or a change that slows everything; reported once. ' +
        `${regs.length} regressions relative to it.`;
    } else if (run.busy) {
      v.className = 'verdict unknown';
      v.textContent = `Cannot judge the newest run's times: busy machine (${run.busy}).`;
    } else if (regs.length) {
      v.className = 'verdict bad';
      v.textContent = `${regs.length} regressions in the newest run.`;
    } else if (!judged) {
      v.className = 'verdict unknown';
      v.textContent = `Cannot judge the newest run: history too short (${earlier} earlier runs` +
        (earlier < M.runs.length - 1 ? ' on its CPU' : '') + `, ${I.rule.min_runs} needed).`;
    } else if (cannot.length) {  // not green: part of the run could not be judged
      v.className = 'verdict unknown';
      v.textContent = `No regression in the newest run among the changes that could be judged; ${cannot.length} ` +
        'changes cannot be judged (listed below, with why).';
    } else {
      v.className = 'verdict ok';
      v.textContent = 'No regression in the newest run.';
    }
    if (M.noise != null && judged && !run.busy) {  // the smallest change this run could show
      v.textContent += ` Its case-to-case noise: ±${(100 * M.noise).toFixed(0)} % of each case's median.`;
    }
    if (run.steadiness) v.textContent += ` The machine over its run: ${run.steadiness}.`;
    if (run.cpu_change) v.textContent += ` Not the run before's CPU: ${run.cpu_change}.`;
  }

  const FILTERS = ['op', 'backend', 'dtype', 'device'];

  function fillSelect(sel, values, keep) {
    const old = sel.value;
    sel.replaceChildren(el('option', { value: '' }, 'all'));
    for (const v of values) sel.append(el('option', { value: String(v) }, String(v)));
    sel.value = keep && values.map(String).includes(old) ? old : '';
  }

  function filters() {
    for (const f of FILTERS) {
      fillSelect($(`f-${f}`), [...new Set(M.cases.map((c) => c[f]))].sort(), true);
    }
    fillSelect($('f-threads'), [...new Set(M.cases.map((c) => c.threads))].sort((a, b) => a - b), true);
  }

  function matching() {
    const want = Object.fromEntries(FILTERS.map((f) => [f, $(`f-${f}`).value]));
    const threads = $('f-threads').value;
    const text = $('f-text').value.trim().toLowerCase();
    return M.cases.filter((c) => FILTERS.every((f) => !want[f] || c[f] === want[f]) &&
      (!threads || String(c.threads) === threads) &&
      (!text || c.name.toLowerCase().includes(text) || c.problem.toLowerCase().includes(text)));
  }

  function series(c, runs, key) {
    const byRun = (points[M.name] || {})[c.id] || {};
    return runs.map((r) => (byRun[r.index] ? byRun[r.index][key] ?? null : null));
  }

  function chart(canvas, c, runs, title, unit, datasets, ys) {
    const vals = ys.filter((v) => v !== null).sort((a, b) => a - b);
    const mid = vals.length ? vals[Math.floor(vals.length / 2)] : null;
    const ch = new Chart(canvas, {
      type: 'line',
      data: { labels: runs.map(runLabel), datasets },
      options: {
        animation: false, responsive: false, maintainAspectRatio: false,
        interaction: { mode: 'nearest', intersect: true },
        plugins: {
          title: { display: true, text: `${title} (${unit})` },
          legend: { display: datasets.filter((d) => !d.band).length > 1,
            labels: { filter: (item, data) => !data.datasets[item.datasetIndex].band } },
          tooltip: { filter: (item) => !item.dataset.band, callbacks: {
            title: (items) => `run ${runs[items[0].dataIndex].id} (commit ${runs[items[0].dataIndex].commit || '?'})`,
            footer: () => 'click: open this run',
          } },
        },
        scales: {
          x: { title: { display: true, text: 'nightly run (commit, date and time UTC)' } },
          // At least ±10 % around the median: a flat series must not fill the chart with noise.
          y: { title: { display: true, text: unit }, beginAtZero: false,
            suggestedMin: mid === null ? undefined : mid * 0.9, suggestedMax: mid === null ? undefined : mid * 1.1 },
        },
        onClick: (evt, elements) => {
          const hit = elements.find((e) => !ch.data.datasets[e.datasetIndex].band);
          if (!hit) return;
          window.location.href = `${runs[hit.index].href}#case-${c.id}`;
        },
        onHover: (evt, elements) => { evt.native.target.style.cursor = elements.length ? 'pointer' : 'default'; },
      },
    });
    charts.push(ch);
    return ch;
  }

  const line = (label, data, color) => ({ label, data, borderColor: color, backgroundColor: color,
    pointRadius: 3, pointHoverRadius: 6, spanGaps: false, borderWidth: 1.5 });

  function card(c, runs) {
    const flagged = M.findings.filter((r) => r.case === c.id && r.verdict === 'regression').map((r) => r.metric);
    const box = el('article', { class: 'case' + (flagged.length ? ' flagged' : ''), id: `case-${c.id}`,
      'data-op': c.op, 'data-backend': c.backend, 'data-dtype': c.dtype, 'data-device': c.device,
      'data-threads': String(c.threads) });
    box.append(el('h3', {}, c.name), el('p', { class: 'meta' },
      `${c.op} · ${c.type} · ${c.backend} · ${c.dtype} · ${c.device} · ${c.threads} thread(s) — ${c.problem}` +
      (flagged.length ? ` — regression: ${flagged.join(', ')}` : '')));
    const row = el('div', { class: 'charts' });
    const canvases = [0, 1, 2].map(() => el('canvas', { width: 380, height: 240 }));
    canvases.forEach((cv) => row.append(cv));
    box.append(row);
    $('cases').append(box);
    const times = series(c, runs, 'time');
    const band = series(c, runs, 'band');
    const flags = series(c, runs, 'flag');
    const t = line('time', times, '#1f77b4');
    t.pointBackgroundColor = flags.map((f) => (f === 'regression' ? RED : f === 'improvement' ? GREEN : '#1f77b4'));
    t.pointBorderColor = t.pointBackgroundColor;
    t.pointStyle = flags.map((f) => (f ? 'triangle' : 'circle'));
    t.pointRadius = flags.map((f) => (f ? 7 : 3));
    const lo = { label: 'band low', band: true, data: band.map((b) => (b ? b[0] : null)), borderWidth: 0,
      pointRadius: 0, borderColor: 'rgba(0,0,0,0)', backgroundColor: 'rgba(31,119,180,0.12)', fill: false };
    const hi = { label: 'band high', band: true, data: band.map((b) => (b ? b[1] : null)), borderWidth: 0,
      pointRadius: 0, borderColor: 'rgba(0,0,0,0)', backgroundColor: 'rgba(31,119,180,0.12)', fill: '-1' };
    chart(canvases[0], c, runs, 'time per run', 'µs', [t, lo, hi], times);
    const g = series(c, runs, 'gflops');
    chart(canvases[1], c, runs, 'throughput', 'GFLOP/s', [line('GFLOP/s', g, GREEN)], g);
    const host = series(c, runs, 'host');
    const mem = [line('host peak', host, '#ff7f0e')];
    const dev = series(c, runs, 'device');
    if (dev.some((v) => v !== null)) mem.push(line('device peak', dev, '#9467bd'));
    chart(canvases[2], c, runs, 'peak memory', 'MB', mem, host.concat(dev));
  }

  function render() {
    while (charts.length) charts.pop().destroy();
    $('cases').replaceChildren();
    const list = matching();
    const runs = visibleRuns();
    list.slice(0, shown).forEach((c) => card(c, runs));
    $('count').textContent = `${list.length} of ${M.cases.length} cases` +
      (list.length > shown ? `, first ${shown} shown` : '');
    $('more').hidden = list.length <= shown;
  }

  async function show(name) {
    M = I.machines.find((m) => m.name === name);
    shown = PAGE;
    await load(M, M.months.slice(-SHOWN_MONTHS));
    summary(); overview(); verdicts(); filters(); render();
    document.body.dataset.ready = M.name; // the browser test waits for this
  }

  const msel = $('f-machine');
  for (const m of I.machines) msel.append(el('option', { value: m.name }, `${m.name} (${m.runs.length} runs)`));
  msel.addEventListener('change', () => show(msel.value));
  for (const id of [...FILTERS.map((f) => `f-${f}`), 'f-threads']) {
    $(id).addEventListener('change', () => { shown = PAGE; render(); });
  }
  $('f-text').addEventListener('input', () => { shown = PAGE; render(); });
  $('more').addEventListener('click', () => { shown += PAGE; render(); });
  $('older').addEventListener('click', async () => { await load(M, M.months); summary(); render(); });
  // A link to #case-N (from the verdicts table) may point below the first page.
  window.addEventListener('hashchange', () => {
    const m = /^#case-(\d+)$/.exec(window.location.hash);
    const c = m && M.cases.find((x) => x.id === Number(m[1]));
    if (c && !document.getElementById(`case-${m[1]}`)) {
      for (const f of FILTERS) $(`f-${f}`).value = '';
      $('f-threads').value = '';
      $('f-text').value = c.name;
      render();
      document.getElementById(`case-${m[1]}`).scrollIntoView();
    }
  });
  show(I.machines[0].name);
})();
