// The dashboard in a real headless browser (Debian's chromium, driven by playwright-core; no
// browser is downloaded). Builds the site from the fixture history, whose newest run has a
// planted slowdown (dense.onednn.default fc) and a planted memory growth (lstm bf16), and a
// control site from the same history without that run. Checks: no console errors, charts drawn,
// the planted regressions in the table and the noisy case not, the filters, a click on a point
// opening its run's page, and the control site showing no regression.
//
//   node scripts/tests/browser_test.mjs [--chromium /usr/bin/chromium]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const scripts = path.dirname(here);
const site = path.join(scripts, 'dashboard-site');
const history = path.join(here, 'fixtures', 'history');
const chromium = process.argv.includes('--chromium')
  ? process.argv[process.argv.indexOf('--chromium') + 1] : '/usr/bin/chromium';
if (!fs.existsSync(chromium)) {
  console.error(`browser test: ${chromium} not found (Debian's chromium package; scripts/install-deps.sh)`);
  process.exit(1);
}
const PLANTED = 'dense.onednn.default/f32/fc-mb1/threads:1';
const PLANTED_MEMORY = 'lstm.onednn.default/bf16/lstm-mb1/threads:1';
const NOISY = 'conv2d.eigen.im2col/f32/pw8-mb1/threads:1';

let passed = 0;
let failed = 0;
function check(ok, what, detail = '') {
  if (ok) passed += 1; else failed += 1;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${!ok && detail ? ` — ${detail}` : ''}`);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lb-browser-'));
const out = path.join(tmp, 'site');
const control = path.join(tmp, 'control');
const control_history = path.join(tmp, 'history-without-newest');
fs.mkdirSync(control_history);
const nights = fs.readdirSync(history).filter((f) => f.endsWith('.json')).sort();
for (const f of nights.slice(0, -1)) fs.copyFileSync(path.join(history, f), path.join(control_history, f));

// The dashboard builds first: it runs `npm ci` when node_modules is missing, which brings
// playwright-core too.
for (const [hist, dest] of [[history, out], [control_history, control]]) {
  execFileSync(path.join(scripts, 'dashboard'), ['--history', hist, '--out', dest], { stdio: 'inherit' });
}
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
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));

  await page.goto(pathToFileURL(path.join(out, 'index.html')).href);
  await page.waitForSelector('article.case canvas');

  // Regressions table.
  const rows = await page.$$eval('#regressions tbody tr', (trs) => trs.map((tr) =>
    [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())));
  const hasRow = (name, metric) => rows.some((r) => r[0].startsWith(name) && r[1] === metric);
  check(hasRow(PLANTED, 'time'), 'the planted slowdown is in the regressions table', JSON.stringify(rows));
  check(hasRow(PLANTED_MEMORY, 'host peak'), 'the planted memory growth is in the regressions table', JSON.stringify(rows));
  check(!rows.some((r) => r[0].startsWith(NOISY)), 'the noisy but unchanged case is not', JSON.stringify(rows));
  check(rows.length === 2, `exactly the two planted regressions are listed (got ${rows.length})`);
  check(await page.isHidden('#no-regressions'), '"no regression" is not shown');

  // Charts drawn: every canvas of the first cards has painted pixels.
  const painted = await page.$$eval('article.case canvas', (cs) => cs.map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n += 1;
    return n;
  }));
  check(painted.length === 3 * 7, `3 charts per case are drawn (${painted.length} canvases)`);
  check(painted.every((n) => n > 500), 'every chart has content', JSON.stringify(painted));
  const points = await page.evaluate(() => [...document.querySelectorAll('article.case canvas')]
    .map((c) => Chart.getChart(c).getDatasetMeta(0).data.length));
  check(points.every((n) => n === 8), 'every time series has a slot per run (8)', JSON.stringify(points));

  // Filters.
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
  await page.selectOption('#f-op', 'lstm');
  const lstm = await page.$$eval('article.case', (as) => as.map((a) => a.dataset.op));
  check(lstm.length === 1 && lstm[0] === 'lstm', 'op filter', JSON.stringify(lstm));
  await page.selectOption('#f-op', '');

  // A click on the planted case's newest time point opens that run's page at the case.
  const card = await page.$(`article.case:has(h3:text-is("${PLANTED}"))`);
  const canvas = await card.$('canvas');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const pt = await canvas.evaluate((c) => {
    const p = Chart.getChart(c).getDatasetMeta(0).data.at(-1);
    return { x: p.x, y: p.y };
  });
  await Promise.all([page.waitForURL(/\/runs\//, { timeout: 10000 }), page.mouse.click(box.x + pt.x, box.y + pt.y)]);
  const url = page.url();
  check(/runs\/2026-11-08T020000_nightly\.html#case-\d+$/.test(url), 'clicking the newest point opens its run', url);
  const rowText = await page.textContent(`tr${new URL(url).hash}`);
  check(rowText.includes(PLANTED), 'the run page shows the clicked case', rowText);

  // The control history has no regression: the table must say so (the check above can fail).
  await page.goto(pathToFileURL(path.join(control, 'index.html')).href);
  await page.waitForSelector('article.case canvas');
  check(await page.isVisible('#no-regressions'), 'without the planted run, "no regression" is shown');
  check((await page.$$('#regressions tbody tr')).length === 0, 'and the table is empty');

  check(problems.length === 0, 'no console errors, page errors or failed requests', problems.join(' | '));
  if (failed) {
    await page.goto(pathToFileURL(path.join(out, 'index.html')).href);
    await page.screenshot({ path: path.join(tmp, 'dashboard.png'), fullPage: true });
  }
} finally {
  await context.close();
  fs.rmSync(userData, { recursive: true, force: true });
}
// The built sites (and a screenshot) stay for a look when something failed.
if (!failed) fs.rmSync(tmp, { recursive: true, force: true });
console.log(`browser: ${passed} passed, ${failed} failed` + (failed ? ` (site and screenshot in ${tmp})` : ''));
process.exit(failed ? 1 : 0);
