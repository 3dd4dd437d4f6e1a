// The dashboard: reads window.LB_DATA (written by scripts/dashboard), fills the regressions
// table, the filters and one card per case with Chart.js line charts of time, throughput and
// peak memory over the runs. Clicking a point opens that run's page at this case.
'use strict';

(function () {
  const D = window.LB_DATA;
  const PAGE = 30; // cards rendered at a time: a history can hold hundreds of cases
  let shown = PAGE;
  const charts = [];

  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c);
    return e;
  };
  const fmt = (v, unit) => (v === null || v === undefined ? '—' : `${Number(v.toPrecision(4))} ${unit}`);
  const runLabel = (r) => (r.date ? r.date.slice(0, 10) : r.id);

  function summary() {
    const runs = D.runs;
    const span = runs.length ? `${runLabel(runs[0])} … ${runLabel(runs[runs.length - 1])}` : 'no runs';
    $('summary').textContent = `${runs.length} runs (${span}), ${D.cases.length} cases. ` +
      (runs.length ? `Newest: ${runs[runs.length - 1].id} on ${runs[runs.length - 1].host}.` : '');
  }

  function regressions() {
    const body = document.querySelector('#regressions tbody');
    if (!D.regressions.length) {
      $('regressions').hidden = true;
      $('no-regressions').hidden = false;
      return;
    }
    const run = D.runs[D.runs.length - 1];
    for (const r of D.regressions) {
      const link = el('a', { href: `${run.href}#case-${r.case}` }, r.name);
      const jump = el('a', { href: `#case-${r.case}`, class: 'jump', title: 'show its charts' }, '↓');
      body.append(el('tr', { class: 'regression' },
        el('td', {}, link, ' ', jump), el('td', {}, r.metric), el('td', {}, fmt(r.value, r.unit)),
        el('td', {}, fmt(r.median, r.unit)), el('td', {}, fmt(r.mad, r.unit)), el('td', {}, fmt(r.limit, r.unit)),
        el('td', {}, `${r.ratio.toFixed(2)}×`), el('td', {}, String(r.runs))));
    }
  }

  const FILTERS = ['op', 'backend', 'dtype', 'device'];

  function filters() {
    for (const f of FILTERS) {
      const sel = $(`f-${f}`);
      sel.append(el('option', { value: '' }, 'all'));
      for (const v of [...new Set(D.cases.map((c) => c[f]))].sort()) sel.append(el('option', { value: v }, v));
      sel.addEventListener('change', () => { shown = PAGE; render(); });
    }
    $('f-text').addEventListener('input', () => { shown = PAGE; render(); });
    $('more').addEventListener('click', () => { shown += PAGE; render(); });
  }

  function matching() {
    const want = Object.fromEntries(FILTERS.map((f) => [f, $(`f-${f}`).value]));
    const text = $('f-text').value.trim().toLowerCase();
    return D.cases.filter((c) => FILTERS.every((f) => !want[f] || c[f] === want[f]) &&
      (!text || c.name.toLowerCase().includes(text) || c.problem.toLowerCase().includes(text)));
  }

  function series(c, key) {
    const byRun = new Map(c.points.map((p) => [p.run, p]));
    return D.runs.map((r) => (byRun.has(r.index) ? byRun.get(r.index)[key] : null));
  }

  function chart(canvas, c, title, unit, datasets) {
    const labels = D.runs.map(runLabel);
    const ch = new Chart(canvas, {
      type: 'line',
      data: { labels, datasets: datasets.map((d, i) => ({
        label: d.label, data: d.data, borderColor: d.color, backgroundColor: d.color,
        pointRadius: 3, pointHoverRadius: 6, spanGaps: false, borderWidth: 1.5 })) },
      options: {
        animation: false, responsive: false, maintainAspectRatio: false,
        interaction: { mode: 'nearest', intersect: true },
        plugins: {
          title: { display: true, text: `${title} (${unit})` },
          legend: { display: datasets.length > 1 },
          tooltip: { callbacks: {
            title: (items) => `run ${D.runs[items[0].dataIndex].id}`,
            footer: () => 'click: open this run',
          } },
        },
        scales: { x: { title: { display: true, text: 'nightly run' } },
                  y: { title: { display: true, text: unit }, beginAtZero: false } },
        onClick: (evt, elements) => {
          if (!elements.length) return;
          const run = D.runs[elements[0].index];
          window.location.href = `${run.href}#case-${c.id}`;
        },
        onHover: (evt, elements) => { evt.native.target.style.cursor = elements.length ? 'pointer' : 'default'; },
      },
    });
    charts.push(ch);
    return ch;
  }

  function card(c) {
    const flagged = D.regressions.filter((r) => r.case === c.id).map((r) => r.metric);
    const box = el('article', { class: 'case' + (flagged.length ? ' flagged' : ''), id: `case-${c.id}`,
      'data-op': c.op, 'data-backend': c.backend, 'data-dtype': c.dtype, 'data-device': c.device });
    box.append(el('h3', {}, c.name), el('p', { class: 'meta' },
      `${c.op} · ${c.type} · ${c.backend} · ${c.dtype} · ${c.device} — ${c.problem}` +
      (flagged.length ? ` — regression: ${flagged.join(', ')}` : '')));
    const row = el('div', { class: 'charts' });
    const canvases = [0, 1, 2].map(() => el('canvas', { width: 360, height: 220 }));
    canvases.forEach((cv) => row.append(cv));
    box.append(row);
    $('cases').append(box);
    chart(canvases[0], c, 'time per run', 'µs', [{ label: 'time', data: series(c, 'time'), color: '#1f77b4' }]);
    chart(canvases[1], c, 'throughput', 'GFLOP/s', [{ label: 'GFLOP/s', data: series(c, 'gflops'), color: '#2ca02c' }]);
    const mem = [{ label: 'host peak', data: series(c, 'host'), color: '#ff7f0e' }];
    if (c.points.some((p) => p.device !== null)) mem.push({ label: 'device peak', data: series(c, 'device'), color: '#9467bd' });
    chart(canvases[2], c, 'peak memory', 'MB', mem);
  }

  function render() {
    while (charts.length) charts.pop().destroy();
    $('cases').replaceChildren();
    const list = matching();
    list.slice(0, shown).forEach(card);
    $('count').textContent = `${list.length} of ${D.cases.length} cases` +
      (list.length > shown ? `, first ${shown} shown` : '');
    $('more').hidden = list.length <= shown;
  }

  summary();
  regressions();
  filters();
  render();
  // A link to #case-N (from the regressions table) may point below the first page.
  window.addEventListener('hashchange', () => {
    const m = /^#case-(\d+)$/.exec(window.location.hash);
    if (m && !document.getElementById(`case-${m[1]}`)) {
      for (const f of FILTERS) $(`f-${f}`).value = '';
      $('f-text').value = D.cases[Number(m[1])].name;
      render();
      document.getElementById(`case-${m[1]}`).scrollIntoView();
    }
  });
})();
