// The dashboard at scale (scripts/bench-dashboard.sh): the time of each page's API answer
// (sequential requests without If-None-Match, so every one is computed and sent in full), then
// in headless Chromium the first contentful paint of the overview and the time from a click on
// each page's link to its table's first row, timed in the page (from the click event to the end of
// the frame that shows the row) and by Playwright (from its click to its finding the row), with
// how much went by before the page's API requests were answered. Prints Markdown for
// docs/BENCHMARKS.md.
//   node tests/bench.mjs http://127.0.0.1:PORT [requests per endpoint]
import { performance } from 'node:perf_hooks';
import { launchBrowser, ADMIN } from './harness.mjs';

const base = process.argv[2];
const count = Number(process.argv[3] || 100);
const headers = { Authorization: `Bearer ${ADMIN}` };
const endpoints = [
  // Does nothing but authenticate and answer: the floor the machine's load sets for the others.
  '/api/version',
  '/api/views/overview',
  '/api/views/pools',
  '/api/views/pools/default',
  '/api/views/queues?resource=gpu',
  '/api/views/queues/default?node_pool=default&resource=gpu',
  '/api/views/workflows?limit=50',
  '/api/views/workflows?limit=50&status=RUNNING',
  '/api/views/workflows?limit=50&user=user-7',
  '/api/views/workflows?limit=50&queue=default',
  '/api/views/nodes?limit=100',
  '/api/views/nodes?limit=100&selector=node-pool%3Dh100',
  '/api/views/machine-pools',
];

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

console.log(`| endpoint | bytes | p50 ms | p99 ms | max ms |`);
console.log(`|---|---:|---:|---:|---:|`);
let workflowId = '';
for (const path of endpoints) {
  const times = [];
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    const response = await fetch(base + path, { headers });
    const text = await response.text();
    times.push(performance.now() - start);
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}: ${text.slice(0, 200)}`);
    bytes = text.length;
    if (!workflowId && path.startsWith('/api/views/workflows')) workflowId = JSON.parse(text).items[0]?.id;
  }
  times.sort((a, b) => a - b);
  console.log(`| \`${path}\` | ${bytes} | ${quantile(times, 0.5).toFixed(1)} | ${quantile(times, 0.99).toFixed(1)} | ${times[times.length - 1].toFixed(1)} |`);
}

const browser = await launchBrowser();
if (!browser) {
  console.log('\n(no Chromium: browser timings skipped)');
  process.exit(0);
}
const page = await browser.context.newPage();
const pages = [
  ['Pools', '[data-testid="pools"] tbody tr'],
  ['Queues', '[data-testid="queues-default"] tbody tr'],
  ['Workflows', '[data-testid="workflows"] tbody tr[data-key]'],
  ['Nodes', '[data-testid="nodes"] tbody tr[data-key]'],
  ['Machine pools', '[data-testid="machine-pools"] tbody tr'],
  ['Overview', '[data-testid="by-product"] tbody tr'],
];
console.log('\n| browser | ms (runs) |');
console.log('|---|---|');
const paints = [];
const changes = Object.fromEntries(pages.map(([name]) => [name, []]));
for (let run = 0; run < 5; run++) {
  // A new document each run (a URL differing only in its fragment would not load one).
  await page.goto('about:blank');
  await page.goto(`${base}/#token=${encodeURIComponent(ADMIN)}`);
  await page.waitForSelector('[data-testid="by-product"] tbody tr');
  paints.push(await page.evaluate(() => {
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    return fcp ? fcp.startTime : NaN;
  }));
  for (const [name, ready] of pages) {
    // Timed in the page, from the click event to the end of the frame that first shows the row, so
    // that Playwright's own work (its checks before clicking, its polling for the row) is left out.
    await page.evaluate((selector) => {
      performance.clearResourceTimings();
      const change = (window.benchChange = { clicked: NaN, shown: NaN });
      document.addEventListener('click', () => { change.clicked = performance.now(); }, { capture: true, once: true });
      const observer = new MutationObserver(() => {
        if (!document.querySelector(selector)) return;
        observer.disconnect();
        // The frame with the row is painted after the next animation frame callbacks; a task
        // queued from one runs once that frame is done.
        requestAnimationFrame(() => setTimeout(() => { change.shown = performance.now(); }));
      });
      observer.observe(document.body, { childList: true, subtree: true });
    }, ready);
    const start = performance.now();
    await page.click(`header nav >> text="${name}"`);
    await page.waitForSelector(ready);
    const seen = performance.now() - start;
    await page.waitForFunction(() => !Number.isNaN(window.benchChange.shown));
    // And of that, until the last /api/ answer the page asked for after the click had arrived.
    const [shown, api] = await page.evaluate(() => {
      const { clicked, shown } = window.benchChange;
      const ends = performance.getEntriesByType('resource')
        .filter((e) => e.name.includes('/api/') && e.startTime >= clicked && e.responseEnd <= shown)
        .map((e) => e.responseEnd - clicked);
      return [shown - clicked, ends.length ? Math.max(...ends) : NaN];
    });
    changes[name].push([shown, api, seen]);
  }
}
const fmt = (xs) => xs.map((x) => x.toFixed(0)).join(', ');
console.log(`| first contentful paint of the overview (a new page load) | ${fmt(paints)} |`);
for (const [name] of pages) {
  const runs = changes[name]
    .map(([shown, api, seen]) => `${shown.toFixed(0)} (${api.toFixed(0)}) [${seen.toFixed(0)}]`)
    .join(', ');
  console.log(`| page change to ${name}: click to first row shown (until the API's answer) [as Playwright sees it] | ${runs} |`);
}
await browser.close();
