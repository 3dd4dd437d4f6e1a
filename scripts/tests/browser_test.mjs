// The dashboard in a real headless browser (Debian's chromium, driven by playwright-core; no
// browser is downloaded). Builds the site from the fixture history — two machines (zen5-vm in
// format 2 with a planted slowdown of dense.onednn.default fc, a planted memory growth of the
// bf16 LSTM and a noisy case in its newest run; vm-intel, an older-format file set from another
// host also called `vm`), nights in two months, one night past retention — and a control site
// from the same history without zen5-vm's newest night. Checks each part of the page: machine
// and thread filters, commits on the x axis and the link to the commits in between, the
// overview (ratio, sparkline, counts), the noise band and the flagged point, no card for a case
// never measured, month files loaded on demand (and only the shown machine's), retention, the
// exit status and alert file, "cannot judge" when the history is too short, a click on a point
// opening its run's page. Screenshots go to --screenshots DIR (default: a temporary folder).
//
//   node scripts/tests/browser_test.mjs [--chromium /usr/bin/chromium] [--screenshots DIR]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const scripts = path.dirname(here);
const site = path.join(scripts, 'dashboard-site');
const history = path.join(here, 'fixtures', 'history');
const arg = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const chromium = arg('--chromium', '/usr/bin/chromium');
if (!fs.existsSync(chromium)) {
  console.error(`browser test: ${chromium} not found (Debian's chromium package; scripts/install-deps.sh)`);
  process.exit(1);
}
const REPO = 'https://github.com/example/layerbench';
const MACHINE = 'zen5-vm';
const PLANTED = 'dense.onednn.default/f32/fc-mb1/threads:1';
const PLANTED_MEMORY = 'lstm.onednn.default/bf16/lstm-mb1/threads:1';
const NOISY = 'conv2d.eigen.im2col/f32/pw8-mb1/threads:1';
const NEVER = 'conv2d.eigen.im2col/f32/dw8-mb1/threads:1';

let passed = 0;
let failed = 0;
function check(ok, what, detail = '') {
  if (ok) passed += 1; else failed += 1;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${!ok && detail ? ` — ${detail}` : ''}`);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lb-browser-'));
const shots = arg('--screenshots', path.join(tmp, 'screenshots'));
fs.mkdirSync(shots, { recursive: true });
const out = path.join(tmp, 'site');
const control = path.join(tmp, 'control');
const controlHistory = path.join(tmp, 'history-without-newest');
fs.cpSync(history, controlHistory, { recursive: true });
const nights = fs.readdirSync(path.join(controlHistory, MACHINE)).sort();
fs.rmSync(path.join(controlHistory, MACHINE, nights.at(-1)));
// The control's newest night probed the machine (`layerbench run --steadiness`): a shared core.
const steadyFile = path.join(controlHistory, MACHINE, nights.at(-2));
const steadyDoc = JSON.parse(fs.readFileSync(steadyFile, 'utf8'));
steadyDoc.context.layerbench_steadiness = JSON.stringify({ windows: 50, fma_spread: 0.117, fma_slowest: 1.71, clock_spread: 0.03 });
fs.writeFileSync(steadyFile, JSON.stringify(steadyDoc));

// The dashboard builds first: it runs `npm ci` when node_modules is missing, which brings
// playwright-core too. With regressions it exits 1 and writes the alert; without, 0 and none.
const build = (hist, dest) => spawnSync(path.join(scripts, 'dashboard'),
  ['--history', hist, '--out', dest, '--repo-url', REPO], { encoding: 'utf8' });
const b1 = build(history, out);
check(b1.status === 1, `the dashboard exits 1 on the planted regressions (got ${b1.status})`, b1.stderr);
const alert = fs.existsSync(path.join(out, 'alert.md')) ? fs.readFileSync(path.join(out, 'alert.md'), 'utf8') : '';
check(alert.includes(PLANTED) && alert.includes(PLANTED_MEMORY) && !alert.includes(NOISY),
  'the alert names the planted cases and not the noisy one', alert);
check(/Commit range: `[0-9a-f]{12}\.\.[0-9a-f]{12}`/.test(alert) && alert.includes(`${REPO}/compare/`),
  'the alert gives the commit range and its link', alert);
const b2 = build(controlHistory, control);
check(b2.status === 0 && !fs.existsSync(path.join(control, 'alert.md')),
  `without the planted night: exit 0, no alert (got ${b2.status})`, b2.stdout + b2.stderr);
check(b1.stdout.includes('1 runs older than 12 months') && !fs.existsSync(path.join(out, 'data', MACHINE, '2025-05.js')),
  'retention: the night of 2025-05 is left out of the site', b1.stdout);

const require = createRequire(path.join(site, 'package.json'));
const { chromium: browserType } = require('playwright-core');

const userData = fs.mkdtempSync(path.join(os.tmpdir(), 'lb-chromium-profile-'));
const context = await browserType.launchPersistentContext(userData, {
  executablePath: chromium,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 900 },
});

try {
  const page = context.pages()[0] || await context.newPage();
  const problems = [];
  const requested = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  page.on('request', (r) => requested.push(r.url()));

  await page.goto(pathToFileURL(path.join(out, 'index.html')).href);
  await page.waitForSelector(`body[data-ready="${MACHINE}"] article.case canvas`);
  await page.screenshot({ path: path.join(shots, 'dashboard-top.png') });

  // Data per machine and month, loaded on demand: zen5-vm's two months, not vm-intel's.
  const dataFiles = requested.filter((u) => u.includes('/data/')).map((u) => u.split('/data/')[1]).sort();
  check(JSON.stringify(dataFiles) === JSON.stringify(['index.js', 'zen5-vm/2026-10.js', 'zen5-vm/2026-11.js']),
    'only the shown machine\'s month files are loaded', JSON.stringify(dataFiles));

  // Verdicts on the newest run.
  const rows = await page.$$eval('#regressions tbody tr', (trs) => trs.map((tr) =>
    [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())));
  const hasRow = (name, metric) => rows.some((r) => r[0].startsWith(name) && r[1] === metric);
  check(hasRow(PLANTED, 'time'), 'the planted slowdown is in the regressions table', JSON.stringify(rows));
  check(hasRow(PLANTED_MEMORY, 'host peak'), 'the planted memory growth is in the regressions table', JSON.stringify(rows));
  check(rows.length === 2, `exactly the two planted regressions are listed (got ${rows.length})`);
  const commitsHref = await page.getAttribute('#regressions tbody tr a.commits', 'href');
  check(commitsHref && commitsHref.startsWith(`${REPO}/compare/`), 'a regression links the commits in between', commitsHref);
  const unjudged = await page.$$eval('#unjudged tbody tr', (trs) => trs.map((tr) => tr.textContent));
  check(unjudged.length === 1 && unjudged[0].includes(NOISY) && unjudged[0].includes('noisy'),
    'the noisy case is "cannot judge (noisy)", not a regression', JSON.stringify(unjudged));
  check((await page.textContent('#verdict')).startsWith('2 regressions'), 'the verdict line counts them');

  // Overview: per layer type and backend, ratio, sparkline, counts.
  const ov = await page.$$eval('#overview tbody tr', (trs) => trs.map((tr) => ({
    type: tr.dataset.type, backend: tr.dataset.backend, cells: [...tr.querySelectorAll('td')].map((t) => t.textContent),
    spark: tr.querySelector('svg.spark path:last-of-type')?.getAttribute('d') || '' })));
  const dense = ov.find((o) => o.type === 'dense' && o.backend === 'onednn');
  check(dense && dense.cells[5] === '1' && parseFloat(dense.cells[3]) > 1.2,
    'overview: dense/onednn has 1 regression and a ratio above 1.2', JSON.stringify(dense));
  check(ov.length >= 5 && ov.every((o) => (o.spark.match(/[ML]/g) || []).length >= 7),
    'overview: a row per layer type and backend, each with a sparkline over the runs', JSON.stringify(ov));

  // Cards: none for the case never measured; the page says so.
  const names = await page.$$eval('article.case h3', (hs) => hs.map((h) => h.textContent));
  check(!names.includes(NEVER), 'no card for the case that was never measured', JSON.stringify(names));
  check((await page.textContent('#never')).includes('1 cases were never measured'), 'and the page says why');

  // The planted case's time chart: commit and time on the x axis, band drawn, newest point flagged.
  const card = await page.$(`article.case:has(h3:text-is("${PLANTED}"))`);
  const canvas = await card.$('canvas');
  const info = await canvas.evaluate((c) => {
    const ch = Chart.getChart(c);
    const t = ch.data.datasets.find((d) => d.label === 'time');
    const hi = ch.data.datasets.find((d) => d.label === 'band high');
    const ticks = ch.scales.x.ticks.map((k) => ch.scales.x.getLabelForValue(k.value));
    return { labels: ch.data.labels, ticks, colors: t.pointBackgroundColor, styles: t.pointStyle,
      band: hi.data, fill: hi.fill, ymin: ch.scales.y.min, ymax: ch.scales.y.max, xtitle: ch.options.scales.x.title.text };
  });
  check(info.labels.length === 8 && info.labels.every((l) => /^[0-9a-f]{8}$/.test(l[0]) && /^\d\d-\d\d \d\d:\d\d$/.test(l[1])),
    'x axis: a commit and a date-time per run', JSON.stringify(info.labels));
  check(info.xtitle.includes('commit'), 'x axis titled with commit and time', info.xtitle);
  check(info.fill === '-1' && info.band.filter((b) => b !== null).length >= 4, 'the noise band is drawn', JSON.stringify(info.band));
  check(info.colors.at(-1) === '#d62728' && info.styles.at(-1) === 'triangle' &&
    info.colors.slice(0, -1).every((c) => c !== '#d62728'), 'the flagged point (and only it) is marked', JSON.stringify(info.colors));
  check(info.ymax / info.ymin > 1.15, 'the y axis is not autoscaled to the noise', `${info.ymin}..${info.ymax}`);

  // Charts drawn.
  const painted = await page.$$eval('article.case canvas', (cs) => cs.map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n += 1;
    return n;
  }));
  check(painted.length === 3 * 8 && painted.every((n) => n > 500), `3 charts per measured case, all drawn (${painted.length})`);
  await card.scrollIntoViewIfNeeded();
  await card.screenshot({ path: path.join(shots, 'dashboard-flagged-case.png') });

  // Filters: threads, then op/backend/dtype/device combined.
  await page.selectOption('#f-threads', '2');
  const t2 = await page.$$eval('article.case', (as) => as.map((a) => a.dataset.threads));
  check(t2.length === 1 && t2[0] === '2', 'thread filter leaves the 2-thread case', JSON.stringify(t2));
  await page.selectOption('#f-threads', '');
  await page.selectOption('#f-backend', 'cudnn');
  const cudnn = await page.$$eval('article.case', (as) => as.map((a) => a.dataset.backend));
  check(cudnn.length === 1 && cudnn[0] === 'cudnn', 'backend filter leaves the cudnn case only', JSON.stringify(cudnn));
  await page.selectOption('#f-backend', '');
  await page.selectOption('#f-device', 'gpu');
  await page.selectOption('#f-dtype', 'f32');
  const gpu = await page.$$eval('article.case', (as) => as.map((a) => a.dataset.device + '/' + a.dataset.dtype));
  check(gpu.length === 2 && gpu.every((g) => g === 'gpu/f32'), 'device and dtype filters combine', JSON.stringify(gpu));
  await page.selectOption('#f-device', '');
  await page.selectOption('#f-dtype', '');

  // Machine filter: the other `vm` is its own machine, with its own (short) history.
  const other = await page.$$eval('#f-machine option', (os) => os.map((o) => o.value).find((v) => v.startsWith('vm-')));
  await page.selectOption('#f-machine', other);
  await page.waitForSelector('body[data-ready^="vm-"] article.case canvas');
  const vmCards = await page.$$eval('article.case h3', (hs) => hs.map((h) => h.textContent));
  check(vmCards.length === 1 && (await page.textContent('#summary')).startsWith('vm-'),
    'machine filter: the second machine shows its own cases', JSON.stringify(vmCards));
  check((await page.textContent('#verdict')).startsWith('Cannot judge the newest run: history too short'),
    'three runs: "cannot judge", not a green verdict', await page.textContent('#verdict'));
  check(requested.some((u) => /\/data\/vm-[^/]+\/2026-11\.js$/.test(u)), 'its month file is loaded when it is shown');
  await page.screenshot({ path: path.join(shots, 'dashboard-second-machine.png'), fullPage: true });
  await page.selectOption('#f-machine', MACHINE);
  await page.waitForSelector(`body[data-ready="${MACHINE}"] article.case canvas`);

  // A click on the planted case's newest time point opens that run's page at the case.
  const card2 = await page.$(`article.case:has(h3:text-is("${PLANTED}"))`);
  const canvas2 = await card2.$('canvas');
  await canvas2.scrollIntoViewIfNeeded();
  const box = await canvas2.boundingBox();
  const pt = await canvas2.evaluate((c) => {
    const p = Chart.getChart(c).getDatasetMeta(0).data.at(-1);
    return { x: p.x, y: p.y };
  });
  await Promise.all([page.waitForURL(/\/runs\//, { timeout: 10000 }), page.mouse.click(box.x + pt.x, box.y + pt.y)]);
  const url = page.url();
  check(new RegExp(`runs/${MACHINE}/2026-11-06T020000_[0-9a-f]{12}\\.html#case-\\d+$`).test(url),
    'clicking the newest point opens its run', url);
  const rowText = await page.textContent(`tr${new URL(url).hash}`);
  check(rowText.includes(PLANTED), 'the run page shows the clicked case', rowText);
  const runCommits = await page.getAttribute('a.commits', 'href');
  check(runCommits && runCommits.startsWith(`${REPO}/compare/`), 'the run page links the commits since the run before', runCommits);
  check((await page.textContent('body')).includes(NEVER), 'the run page lists the never-measured case');
  await page.screenshot({ path: path.join(shots, 'dashboard-run-page.png') });

  // The control history has no regression: the verdict must say so (the checks above can fail).
  await page.goto(pathToFileURL(path.join(control, 'index.html')).href);
  await page.waitForSelector(`body[data-ready="${MACHINE}"] article.case canvas`);
  check((await page.textContent('#verdict')).startsWith('No regression in the newest run'),
    'without the planted run, "no regression" is shown', await page.textContent('#verdict'));
  check(await page.isHidden('#regressions'), 'and the table is hidden');
  check((await page.textContent('#verdict')).includes("The machine over its run: one core's FMA throughput varied " +
    '±11.7% (robust SD of 50 windows over the run, slowest 1.71× the median), its clock ±3.0%: other work shares the core'),
    "the newest run's steadiness probe is on the verdict line", await page.textContent('#verdict'));
  const controlUnjudged = !(await page.isHidden('#unjudged-box'));
  check((await page.getAttribute('#verdict', 'class')).includes(controlUnjudged ? 'unknown' : 'ok'),
    'green only when every change could be judged', `${await page.getAttribute('#verdict', 'class')}, unjudged: ${controlUnjudged}`);

  check(problems.length === 0, 'no console errors, page errors or failed requests', problems.join(' | '));
  await page.goto(pathToFileURL(path.join(out, 'index.html')).href);
  await page.waitForSelector(`body[data-ready="${MACHINE}"] article.case canvas`);
  await page.screenshot({ path: path.join(shots, 'dashboard-full.png'), fullPage: true });
} finally {
  await context.close();
  fs.rmSync(userData, { recursive: true, force: true });
}
// The built sites stay for a look when something failed.
if (!failed) fs.rmSync(tmp, { recursive: true, force: true });
console.log(`browser: ${passed} passed, ${failed} failed; screenshots in ${shots}` +
  (failed ? ` (sites in ${tmp})` : ''));
process.exit(failed ? 1 : 0);
