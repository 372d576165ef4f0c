// What the dashboard's browser tests run against: the demo store of `make run`
// (scripts/run-demo.sh), a real `gpupool serve` on it with its scheduling loop on the simulated
// demo cluster, and Debian's Chromium driven by playwright-core (never a downloaded browser).
// Everything binds to 127.0.0.1; the server and the browser are stopped by the tests' `after`.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, mkdirSync, existsSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// (import.meta.dirname needs Node 20.11; Debian 12 has Node 18.)
const here = dirname(fileURLToPath(import.meta.url));

export const root = resolve(process.env.GPUPOOL_SOURCE_DIR || join(here, '..', '..'));
export const buildDir = resolve(process.env.GPUPOOL_BUILD_DIR || join(root, 'build'));
export const bin = join(buildDir, 'bin', 'gpupool');
export const shotDir = process.env.GPUPOOL_SCREENSHOT_DIR || join(buildDir, 'dashboard-screenshots');
export const chromiumPath = process.env.GPUPOOL_CHROMIUM || '/usr/bin/chromium';

export const ADMIN = 'dev:admin:osmo-admin';
export const USER = 'dev:bob:osmo-user';
export const READER = 'dev:carol:config-reader';

// Loads the demo store into a fresh directory and starts `gpupool serve` on a free port.
// `auth`: the authentication flags (default `--auth dev`).
export async function startServer(extraArgs = [], { auth = ['--auth', 'dev'] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'gpupool-dashboard-'));
  const demo = spawnSync('bash', [join(root, 'scripts', 'run-demo.sh'), buildDir], {
    env: { ...process.env, GPUPOOL_DEMO_RUN_DIR: dir, GPUPOOL_DEMO_SERVER: '0' },
    encoding: 'utf8',
  });
  if (demo.status !== 0) throw new Error(`run-demo.sh failed:\n${demo.stdout}\n${demo.stderr}`);
  const args = [
    'serve', '--listen', '127.0.0.1:0', '--db', `sqlite:${dir}/demo.db`,
    '--backend', `sim:${join(root, 'examples', 'cluster')}`, ...auth,
    '--interval', '200ms', '--history-interval', '1s', '--provision-delay', '3s', ...extraArgs,
  ];
  const server = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  server.stderr.on('data', (d) => (log += d));
  const url = await new Promise((resolveUrl, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`gpupool serve did not start:\n${out}\n${log}`)), 30000);
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolveUrl(m[1]);
      }
    });
    server.on('exit', (code) => reject(new Error(`gpupool serve exited ${code}:\n${out}\n${log}`)));
  });
  return {
    url,
    dir,
    log: () => log,
    async stop() {
      server.kill('SIGTERM');
      await new Promise((r) => (server.exitCode !== null ? r() : server.on('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// Starts the fake OIDC issuer (fake_oidc_issuer.py) on a free loopback port. It approves `user`
// with `roles` at once; `settings` changes that (and the audience, the redirect URIs) while it runs.
export async function startIssuer({ user = 'alice', roles = 'osmo-user', audience = 'gpupool', clientId = 'gpupool-dashboard' } = {}) {
  const issuer = spawn('python3', [
    join(here, 'fake_oidc_issuer.py'), '--user', user, '--roles', roles, '--audience', audience, '--client-id', clientId,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  issuer.stderr.on('data', (d) => (log += d));
  const url = await new Promise((resolveUrl, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the fake issuer did not start:\n${out}\n${log}`)), 30000);
    issuer.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolveUrl(m[1]);
      }
    });
    issuer.on('exit', (code) => reject(new Error(`the fake issuer exited ${code}:\n${out}\n${log}`)));
  });
  async function json(path, init) {
    const response = await fetch(url + path, init);
    return { status: response.status, headers: response.headers, body: await response.json().catch(() => null) };
  }
  return {
    url,
    clientId,
    log: () => log,
    settings: async (changes) => (await json('/_test/settings', { method: 'POST', body: JSON.stringify(changes) })).body,
    events: async () => (await json('/_test/events')).body,
    json,
    async stop() {
      issuer.kill('SIGTERM');
      await new Promise((r) => (issuer.exitCode !== null ? r() : issuer.on('exit', r)));
    },
  };
}

// PKCE (RFC 7636): a verifier and its S256 challenge.
export function pkcePair() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

// The authorization-code flow outside the browser: the code for `challenge`, then the token
// endpoint's answer for `verifier` ({status, body}).
export async function codeFlow(issuer, redirectUri, { verifier, challenge }) {
  const q = new URLSearchParams({
    response_type: 'code', client_id: issuer.clientId, redirect_uri: redirectUri, scope: 'openid',
    state: 'test', code_challenge: challenge, code_challenge_method: 'S256',
  });
  const authorize = await fetch(`${issuer.url}/authorize?${q}`, { redirect: 'manual' });
  const location = new URL(authorize.headers.get('location'));
  const code = location.searchParams.get('code');
  if (!code) return { status: authorize.status, body: Object.fromEntries(location.searchParams) };
  return issuer.json('/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: issuer.clientId, code_verifier: verifier,
    }).toString(),
  });
}

export function api(base, token = ADMIN) {
  async function call(method, path, body, contentType) {
    const headers = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers['Content-Type'] = contentType || 'application/json';
    const response = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch (e) {
      json = null;
    }
    if (!response.ok) {
      const error = new Error(`${method} ${path}: HTTP ${response.status}: ${text}`);
      error.status = response.status;
      error.body = json;
      throw error;
    }
    return json;
  }
  return {
    get: (path) => call('GET', path),
    post: (path, body, type) => call('POST', path, body, type),
    put: (path, body, type) => call('PUT', path, body, type),
    patch: (path, body) => call('PATCH', path, body),
    submit: (pool, file) =>
      call('POST', `/api/pool/${pool}/workflow`, readFileSync(join(here, 'fixtures', file), 'utf8'), 'application/yaml'),
  };
}

// Chromium as root needs --no-sandbox; the rest keeps it off the network and quiet.
export async function launchBrowser() {
  if (!existsSync(chromiumPath)) return null;
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'gpupool-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1366, height: 768 },
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export function ensureShotDir() {
  mkdirSync(shotDir, { recursive: true });
  return shotDir;
}

// Retries `check` (which throws while the condition does not hold) until it passes or `ms` pass.
export async function eventually(check, ms = 15000, step = 250) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw last;
    await new Promise((r) => setTimeout(r, step));
  }
}
