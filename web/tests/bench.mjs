// The dashboard at scale (scripts/bench-dashboard.sh): the time of each page's API answer
// (sequential requests without If-None-Match, so every one is computed and sent in full), then
// in headless Chromium the first contentful paint of the overview and the time from a click on
// each page's link to its table's first row, with how much of it went by before the page's API
// requests were answered. Prints Markdown for docs/BENCHMARKS.md.
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
    // The page's own clock at the click, so that its resource timings say when the API answered.
    const clicked = await page.evaluate(() => {
      performance.clearResourceTimings();
      return performance.now();
    });
    const start = performance.now();
    await page.click(`header nav >> text="${name}"`);
    await page.waitForSelector(ready);
    const total = performance.now() - start;
    // Of that, until the last /api/ answer the page asked for after the click had arrived; the
    // rest is the browser's (routing, parsing, Vue's rendering, Playwright's round trips).
    const api = await page.evaluate((since) => {
      const now = performance.now();
      const ends = performance.getEntriesByType('resource')
        .filter((e) => e.name.includes('/api/') && e.startTime >= since && e.responseEnd <= now)
        .map((e) => e.responseEnd - since);
      return ends.length ? Math.max(...ends) : NaN;
    }, clicked);
    changes[name].push([total, api]);
  }
}
const fmt = (xs) => xs.map((x) => x.toFixed(0)).join(', ');
console.log(`| first contentful paint of the overview (a new page load) | ${fmt(paints)} |`);
for (const [name] of pages) {
  const runs = changes[name].map(([total, api]) => `${total.toFixed(0)} (${api.toFixed(0)})`).join(', ');
  console.log(`| page change to ${name}: click to first row (of which until the API's answer) | ${runs} |`);
}
await browser.close();
