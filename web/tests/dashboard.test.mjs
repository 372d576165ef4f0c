// The dashboard in a real browser against a real server with the demo data and its scheduling
// loop running: every page shows the numbers the REST API returned for it, pending work shows the
// scheduler's reason and queue position, a new workflow appears and moves on without a reload,
// cancel and rollback work for an administrator and are refused with the API's reason for others,
// and no page logs a console error. A screenshot of each page goes to the build directory.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  startServer, api, launchBrowser, ensureShotDir, eventually, ADMIN, USER, READER,
} from './harness.mjs';
import { gpus, amount, percent } from '../src/format.js';

let server;
let browser;
let admin;
const consoleErrors = [];
let allowedErrors = [];

before(async () => {
  server = await startServer();
  admin = api(server.url, ADMIN);
  await admin.post('/api/apply', readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'org.yaml'), 'utf8'), 'application/yaml');
  await admin.put('/api/configs/ROLE/config-reader', {
    description: 'may read configs, not change them',
    policies: [{ effect: 'Allow', actions: ['config:Read', 'pool:List'], resources: ['*'] }],
  });
  for (let i = 0; i < 4; i++) await admin.submit('robotics-training', 'h100-job.yaml');
  await admin.submit('default', 'long.yaml');
  browser = await launchBrowser();
  ensureShotDir();
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

// A page logged in as `token`, recording console errors and the JSON of every /api/views answer.
async function open(token, path) {
  const page = await browser.context.newPage();
  const views = new Map();
  page.on('console', (m) => {
    // The resource's URL is part of the entry: a refused request is allowed by what it asked.
    if (m.type() === 'error') consoleErrors.push(`${path}: ${m.text()} (${m.location().url || ''})`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`${path}: ${e.message}`));
  page.on('response', async (r) => {
    const u = new URL(r.url());
    if (r.status() === 200 && u.pathname.startsWith('/api/')) {
      try {
        views.set(u.pathname, await r.json());
      } catch (e) {
        // not JSON
      }
    }
  });
  await page.goto(`${server.url}${path}#token=${encodeURIComponent(token)}`);
  return { page, views };
}

async function rows(page, table) {
  return page.$$eval(`[data-testid="${table}"] tbody tr[data-key], [data-testid="${table}"] tfoot tr[data-key]`, (trs) =>
    trs.map((tr) => {
      const out = { key: tr.dataset.key };
      for (const cell of tr.querySelectorAll('[data-field]')) out[cell.dataset.field] = cell.textContent.trim();
      return out;
    }));
}

async function shot(page, name) {
  await page.screenshot({ path: join(ensureShotDir(), `${name}.png`), fullPage: false });
}

function skipWithoutBrowser(t) {
  if (!browser) {
    t.skip('Chromium is not installed at /usr/bin/chromium (apt-get install chromium): browser tests skipped');
    return true;
  }
  return false;
}

describe('dashboard', () => {
  test('a #token= fragment logs in once and leaves the address bar', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page } = await open(ADMIN, '/');
    await page.waitForSelector('[data-testid="me"] span');
    assert.match(await page.textContent('[data-testid="me"]'), /admin/);
    assert.ok(!page.url().includes('token'), page.url());
    assert.equal(await page.evaluate(() => sessionStorage.getItem('gpupool.token')), ADMIN);
    await page.close();
  });

  test('overview shows the numbers of /api/views/overview', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page, views } = await open(ADMIN, '/');
    await page.waitForSelector('[data-testid="by-product"] tbody tr');
    await eventually(async () => {
      const json = views.get('/api/views/overview');
      assert.ok(json);
      const cards = await page.$$eval('[data-testid="totals"] [data-field]', (cs) =>
        Object.fromEntries(cs.map((c) => [c.dataset.field, c.textContent.trim()])));
      const t = json.totals;
      assert.deepEqual(cards, {
        nodes: String(t.nodes), gpu_capacity: gpus(t.gpu_capacity), gpu_allocated: gpus(t.gpu_allocated),
        gpu_free: gpus(t.gpu_free), running_tasks: String(t.running_tasks), pending_tasks: String(t.pending_tasks),
        pending_gpus: gpus(t.pending_gpus), idle_allocated_gpus: gpus(t.idle_allocated_gpus),
      });
      assert.deepEqual(await rows(page, 'by-product'), json.by_product.map((r) => ({
        key: r.product, nodes: String(r.nodes), gpu_capacity: gpus(r.gpu_capacity), gpu_allocated: gpus(r.gpu_allocated),
      })));
      assert.deepEqual(await rows(page, 'by-node-pool'), json.by_node_pool.map((r) => ({
        key: r.node_pool, nodes: String(r.nodes), gpu_capacity: gpus(r.gpu_capacity),
        gpu_allocated: gpus(r.gpu_allocated), pending_tasks: String(r.pending_tasks),
      })));
      assert.deepEqual(await rows(page, 'pending-by-queue'), json.pending_by_queue.map((r) => ({
        key: r.queue, tasks: String(r.tasks), gpus: gpus(r.gpus),
      })));
      assert.ok(t.gpu_allocated > 0, 'the loop has placed the H100 jobs');
      assert.ok(json.history.samples.length >= 2, 'the chart has samples');
    });
    await page.waitForSelector('canvas');
    await shot(page, 'overview');
    await page.emulateMedia({ colorScheme: 'dark' });
    await shot(page, 'overview-dark');
    await page.close();
  });

  test('pools page matches /api/views/pools and the pool list of /api/pool', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page, views } = await open(ADMIN, '/pools');
    await page.waitForSelector('[data-testid="pools"] tbody tr');
    await eventually(async () => {
      const json = views.get('/api/views/pools');
      const classic = await admin.get('/api/pool');
      const want = json.pools.map((p) => ({
        key: p.name, status: p.status, quota_used: String(p.quota_used),
        quota_free: p.quota_limit < 0 ? '∞' : String(p.quota_free),
        capacity_used: String(p.capacity_used), capacity_free: String(p.capacity_free),
      }));
      want.push({
        key: '(total)', quota_used: String(json.totals.quota_used),
        capacity_used: String(json.totals.capacity_used), capacity_free: String(json.totals.capacity_free),
      });
      assert.deepEqual(await rows(page, 'pools'), want);
      for (const p of json.pools) {
        const c = classic.pools.find((x) => x.name === p.name);
        assert.equal(p.capacity, c.gpu.total_capacity, p.name);
        assert.equal(p.capacity_used, c.gpu.total_used, p.name);
        assert.equal(p.quota_used, c.gpu.quota_used, p.name);
        assert.equal(p.status, c.status, p.name);
      }
    });
    assert.ok(await page.$('.tag.shared'), 'pools sharing nodes are marked');
    await shot(page, 'pools');
    await page.click('text=robotics-training');
    await page.waitForSelector('[data-testid="occupancy"] tbody tr[data-key]');
    await eventually(async () => {
      const json = views.get('/api/views/pools/robotics-training');
      assert.deepEqual(await rows(page, 'occupancy'), json.occupancy.map((o) => ({
        key: o.user, workflows: String(o.workflows), running_tasks: String(o.running_tasks),
        pending_tasks: String(o.pending_tasks), gpus: String(o.gpus), cpu: amount('cpu', o.cpu_milli),
      })));
    });
    await shot(page, 'pool');
    await page.close();
  });

  test('queues page shows the tree with fair shares, and a queue explains its fair share', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page, views } = await open(ADMIN, '/queues');
    await page.waitForSelector('[data-testid="queues-default"] tbody tr');
    await eventually(async () => {
      const json = views.get('/api/views/queues');
      assert.ok(json.leader);
      for (const pool of json.node_pools) {
        const want = json.rows.filter((r) => r.node_pool === pool.name).map((r) => ({
          key: r.queue, deserved: amount('gpu', r.deserved), limit: amount('gpu', r.limit), weight: String(r.weight),
          fair_share: amount('gpu', r.fair_share), allocated: amount('gpu', r.allocated), ratio: percent(r.ratio),
          pending_tasks: String(r.pending_tasks), pending: amount('gpu', r.pending),
        }));
        assert.deepEqual(await rows(page, `queues-${pool.name}`), want, pool.name);
      }
      const over = await page.$$eval('tr.over', (trs) => trs.map((tr) => tr.dataset.key));
      assert.deepEqual(over.sort(), json.rows.filter((r) => r.ratio !== null && r.ratio > 1).map((r) => r.queue).sort());
      assert.ok(json.rows.some((r) => r.queue === 'research-vision' && r.parent === 'research'));
    });
    await shot(page, 'queues');
    await page.click('[data-testid="queues-default"] tr[data-key="robotics-training"] a');
    await page.waitForSelector('[data-testid="explanation-result"]');
    await eventually(async () => {
      const json = [...views.entries()].find(([k]) => k.startsWith('/api/views/queues/robotics-training'))[1];
      assert.ok(json.explanation.matches_scheduler, JSON.stringify(json.explanation));
      assert.equal(await page.textContent('[data-testid="explanation-result"]'), json.explanation.summary);
      assert.equal(await page.textContent('[data-testid="queue-numbers"] [data-field="fair_share"]'), amount('gpu', json.row.fair_share));
      assert.equal(await page.textContent('[data-testid="queue-numbers"] [data-field="allocated"]'), amount('gpu', json.row.allocated));
    });
    await page.waitForSelector('canvas');
    await shot(page, 'queue');
    await page.close();
  });

  test('a pending workflow shows the scheduler\'s reason and its position in the queue', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page, views } = await open(ADMIN, '/workflows?pool=robotics-training');
    await page.waitForSelector('[data-testid="workflows"] tbody tr[data-key]');
    let pendingId;
    await eventually(async () => {
      const json = [...views.entries()].find(([k]) => k === '/api/views/workflows')[1];
      const pending = json.items.filter((w) => w.status === 'PENDING');
      assert.ok(pending.length >= 1, 'some H100 jobs wait');
      for (const w of pending) {
        const task = w.tasks.find((x) => x.status === 'PENDING');
        assert.ok(task.queue_position >= 1 && task.message, JSON.stringify(task));
        const row = page.locator(`[data-testid="workflows"] tr[data-key="${w.id}"]`);
        assert.equal(await row.locator('[data-field="position"]').textContent(), `#${task.queue_position} of ${task.queue_length} in ${w.queue}`);
        assert.equal(await row.locator('[data-field="reason"]').textContent(), task.message);
      }
      pendingId = pending[0].id;
    });
    await shot(page, 'workflows');
    await page.click(`[data-testid="workflows"] tr[data-key="${pendingId}"] a`);
    await page.waitForSelector('[data-testid="tasks"] tbody tr');
    await eventually(async () => {
      const json = views.get(`/api/views/workflows/${pendingId}`);
      const task = json.tasks[0];
      const dom = (await rows(page, 'tasks'))[0];
      assert.equal(dom.status, task.status);
      assert.equal(dom.position, task.queue_position ? `#${task.queue_position} of ${task.queue_length}` : '');
      assert.equal(dom.reason, task.message);
    });
    assert.match(await page.textContent('[data-testid="pod"]'), /"kind": "Pod"/);
    // The simulated cluster runs no processes: the page says there is no output, with the reason.
    await page.waitForSelector('[data-testid="logs-unavailable"]');
    assert.match(await page.textContent('[data-testid="logs-unavailable"]'), /the sim backend keeps no task output/);
    // The browser logs that 409 (the logs route's answer for the simulated cluster) as an error.
    allowedErrors.push(/status of 409 .*\/api\/workflow\/[^/]+\/logs\?/);
    await shot(page, 'workflow');
    await page.close();
  });

  test('a submitted workflow appears and changes state live, without a reload', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page } = await open(ADMIN, '/workflows?pool=default');
    await page.waitForSelector('[data-testid="workflows"] tbody tr');
    await page.evaluate(() => (window.__sameDocument = true));
    const submitted = await admin.submit('default', 'long.yaml');
    const row = `[data-testid="workflows"] tr[data-key="${submitted.workflow_id}"]`;
    let since = Date.now();
    await page.waitForSelector(row, { timeout: 15000 });
    t.diagnostic(`appeared ${Date.now() - since} ms after the submission`);
    await page.waitForFunction((sel) => document.querySelector(`${sel} [data-field="status"]`)?.textContent === 'RUNNING', row, { timeout: 15000 });
    // A change made elsewhere (the API) shows on the open page too.
    since = Date.now();
    await admin.post(`/api/workflow/${submitted.workflow_id}/cancel`);
    await page.waitForFunction((sel) => document.querySelector(`${sel} [data-field="status"]`)?.textContent === 'CANCELED', row, { timeout: 15000 });
    t.diagnostic(`CANCELED shown ${Date.now() - since} ms after the cancel (polling every 1.5 s)`);
    assert.equal(await page.evaluate(() => window.__sameDocument), true);
    await page.close();
  });

  test('a hidden tab polls nothing and catches up when shown again', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page } = await open(ADMIN, '/workflows?pool=default');
    await page.waitForSelector('[data-testid="workflows"] tbody tr');
    const polls = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/views/')) polls.push(Date.now());
    });
    // What the browser does when another tab comes to the front: the page's visibilityState
    // becomes "hidden" and a visibilitychange event fires.
    const setVisibility = (state) => page.evaluate((s) => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => s });
      document.dispatchEvent(new Event('visibilitychange'));
    }, state);
    await eventually(() => assert.ok(polls.length >= 1, 'the visible page polls'), 10000);
    await setVisibility('hidden');
    const hiddenAt = Date.now();
    // Three poll intervals with the tab hidden: a page still polling would ask at least twice.
    await new Promise((r) => setTimeout(r, 4500));
    // (A poll already on its way when the tab was hidden may still arrive just after.)
    assert.deepEqual(polls.filter((at) => at > hiddenAt + 200), [], 'no polls while hidden');
    const shownAt = Date.now();
    const submitted = await admin.submit('default', 'long.yaml');
    await setVisibility('visible');
    await page.waitForSelector(`[data-testid="workflows"] tr[data-key="${submitted.workflow_id}"]`, { timeout: 15000 });
    assert.ok(polls.some((at) => at >= shownAt), 'polling resumed');
    await page.close();
  });

  test('cancel: refused with the API\'s reason for a user without the role, done for an admin', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const list = await admin.get('/api/views/workflows?pool=robotics-training');
    const id = list.items.find((w) => w.status === 'RUNNING' || w.status === 'PENDING').id;
    let refusal;
    try {
      await api(server.url, USER).post(`/api/workflow/${id}/cancel`);
    } catch (e) {
      refusal = e;
    }
    assert.equal(refusal?.status, 403);
    allowedErrors.push(/status of 403/);

    const user = await open(USER, `/workflows/${id}`);
    user.page.on('dialog', (d) => d.accept());
    await user.page.click('[data-testid="cancel"]');
    await user.page.waitForSelector('[data-testid="error"]');
    assert.equal((await user.page.textContent('[data-testid="error"]')).trim(), refusal.body.message);
    await user.page.close();
    assert.notEqual((await admin.get(`/api/workflow/${id}`)).status, 'CANCELED');

    const { page } = await open(ADMIN, `/workflows/${id}`);
    page.on('dialog', (d) => d.accept());
    await page.click('[data-testid="cancel"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="workflow-facts"] [data-field="status"]')?.textContent === 'CANCELED', null, { timeout: 10000 });
    assert.equal((await admin.get(`/api/workflow/${id}`)).status, 'CANCELED');
    await page.close();
  });

  test('rollback: done for an admin with a diff first, refused with the reason otherwise', async (t) => {
    if (skipWithoutBrowser(t)) return;
    await admin.patch('/api/configs/POOL/default', { description: 'Default pool, edited' });
    const { page } = await open(ADMIN, '/configs');
    page.on('dialog', (d) => d.accept());
    await page.click('[data-testid="configs"] tr[data-key="POOL/default"] button');
    await page.waitForSelector('[data-testid="rollback-1"]');
    assert.match(await page.textContent('[data-testid="diff"]'), /-\s+"description": "Default pool",\s*\+\s+"description": "Default pool, edited"/);
    await shot(page, 'configs');
    await page.click('[data-testid="rollback-1"]');
    await page.waitForSelector('[data-testid="action-done"]');
    const current = await admin.get('/api/configs/POOL/default');
    assert.equal(current.body.description, 'Default pool');
    assert.match(await page.textContent('[data-testid="action-done"]'), new RegExp(`revision ${current.revision}`));
    await page.close();

    let refusal;
    try {
      await api(server.url, READER).post('/api/configs/history/rollback', { kind: 'POOL', name: 'default', revision: 2 });
    } catch (e) {
      refusal = e;
    }
    assert.equal(refusal?.status, 403);
    const reader = await open(READER, '/configs');
    reader.page.on('dialog', (d) => d.accept());
    await reader.page.click('[data-testid="configs"] tr[data-key="POOL/default"] button');
    await reader.page.click('[data-testid="rollback-2"]');
    await reader.page.waitForSelector('[data-testid="history"] [data-testid="error"]');
    assert.equal((await reader.page.textContent('[data-testid="history"] [data-testid="error"]')).trim(), refusal.body.message);
    assert.equal((await admin.get('/api/configs/POOL/default')).revision, current.revision);
    await reader.page.close();
  });

  test('nodes page: allocation per resource, label-selector filter, the API\'s count', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page, views } = await open(ADMIN, '/nodes');
    await page.waitForSelector('[data-testid="nodes"] tbody tr[data-key]');
    const check = async ({ someUse = false } = {}) => {
      const json = views.get('/api/views/nodes');
      assert.equal(await page.textContent('[data-testid="node-count"]'), `${json.total} node(s) match.`);
      assert.deepEqual(await rows(page, 'nodes'), json.items.map((n) => {
        const out = { key: n.name, node_pool: n.node_pool };
        for (const r of n.resources) out[r.name] = `${amount(r.name, r.allocated)}/${amount(r.name, r.capacity)}`;
        return out;
      }));
      // Each resource's bar: the API's allocated of its capacity, filled to that share, marked
      // when over 90 % of it.
      const bars = await page.$$eval('[data-testid="nodes"] tbody tr[data-key] [data-field] [role="meter"]', (els) =>
        els.map((el) => ({
          label: el.getAttribute('aria-label'),
          now: Number(el.getAttribute('aria-valuenow')),
          max: Number(el.getAttribute('aria-valuemax')),
          fill: Number(parseFloat(getComputedStyle(el).backgroundSize).toFixed(1)),
          high: el.classList.contains('high'),
        })));
      assert.deepEqual(bars, json.items.flatMap((n) => n.resources.map((r) => {
        const max = Math.max(r.capacity, r.allocated, 1);
        return {
          label: `${n.name} ${r.name} allocated`,
          now: r.allocated,
          max,
          fill: Number(((100 * r.allocated) / max).toFixed(1)),
          high: r.allocated > (r.capacity * 0.9 || 1),
        };
      })));
      if (someUse) assert.ok(bars.some((b) => b.fill > 0), 'some bar shows something allocated');
    };
    await eventually(() => check({ someUse: true }));
    await shot(page, 'nodes');
    await page.fill('input[name="selector"]', 'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3');
    await page.click('[data-testid="node-filters"] button[type="submit"]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="nodes"] tbody tr[data-key]').length === 2);
    await eventually(check);
    assert.equal(views.get('/api/views/nodes').total, 2);
    await page.close();
  });

  test('machine pools page: replicas, prices and the scale events', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const { page, views } = await open(ADMIN, '/machine-pools');
    await page.waitForSelector('[data-testid="machine-pools"] tbody tr[data-key]');
    await eventually(async () => {
      const json = views.get('/api/views/machine-pools');
      assert.deepEqual(await rows(page, 'machine-pools'), json.pools.map((p) => ({
        key: p.name, current: String(p.current), ready: String(p.ready), min: String(p.min), max: String(p.max),
        price: `$${p.price_per_hour}`, cost_per_hour: `$${p.cost_per_hour}`, cost_so_far: `$${p.cost_so_far}`,
      })));
      assert.ok(json.events.some((e) => e.what.startsWith('launched')), 'min_replicas were launched');
    });
    await shot(page, 'machine-pools');
    await page.close();
  });

  test('no page logged a console error', (t) => {
    if (skipWithoutBrowser(t)) return;
    const unexpected = consoleErrors.filter((e) => !allowedErrors.some((re) => re.test(e)));
    assert.deepEqual(unexpected, []);
  });
});
