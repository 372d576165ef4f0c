// `gpupool serve --auth oidc` with the dashboard's login in a real browser: the authorization-code
// flow with PKCE (oidc-client-ts) against a fake issuer (fake_oidc_issuer.py, loopback only, with
// a key made for this run), the server checking the issuer's RS256 tokens against its JWKS. The
// user lands where the login started, sees what their roles allow, and logs out at the issuer; a
// wrong PKCE verifier is refused by the issuer and a token for another audience by gpupool, and
// the dashboard says why.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, startIssuer, launchBrowser, ensureShotDir, eventually, api, pkcePair, codeFlow,
} from './harness.mjs';
import { join } from 'node:path';

let issuer;
let server;
let browser;
let redirectUri;
const consoleErrors = [];

// The roles of the user the issuer approves: pools of the robotics team besides `default`.
const ROSA = { user: 'rosa', roles: ['osmo-user', 'osmo-robotics'] };

before(async () => {
  issuer = await startIssuer({ user: ROSA.user, roles: ROSA.roles.join(',') });
  server = await startServer([], {
    auth: [
      '--auth', 'oidc', '--jwks', `${issuer.url}/jwks`, '--issuer', issuer.url, '--audience', 'gpupool',
      '--ui-client-id', issuer.clientId,
    ],
  });
  redirectUri = `${server.url}/callback`;
  await issuer.settings({ redirect_uris: [redirectUri] });
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
  if (issuer) await issuer.stop();
});

// A token from the issuer for `who` (PKCE done right), outside the browser.
async function tokenFor(who) {
  await issuer.settings({ user: who.user, roles: who.roles });
  const answer = await codeFlow(issuer, redirectUri, pkcePair());
  await issuer.settings({ user: ROSA.user, roles: ROSA.roles });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.access_token;
}

async function newPage(name) {
  const page = await browser.context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push({ test: name, text: m.text() });
  });
  page.on('pageerror', (e) => consoleErrors.push({ test: name, text: e.message }));
  return page;
}

async function logIn(page, path) {
  await page.goto(server.url + path);
  await page.waitForURL((u) => u.pathname === '/login');
  await page.click('.login-panel button.primary');
}

function skipWithoutBrowser(t) {
  if (!browser) {
    t.skip('Chromium is not installed at /usr/bin/chromium: browser tests skipped');
    return true;
  }
  return false;
}

describe('dashboard with --auth oidc', () => {
  test('the issuer refuses a wrong PKCE verifier, a missing one and a request without a challenge', async () => {
    const pair = pkcePair();
    const wrong = await codeFlow(issuer, redirectUri, { challenge: pair.challenge, verifier: pkcePair().verifier });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error, 'invalid_grant');
    const missing = await codeFlow(issuer, redirectUri, { challenge: pair.challenge, verifier: '' });
    assert.equal(missing.status, 400);
    const plain = await fetch(`${issuer.url}/authorize?${new URLSearchParams({
      response_type: 'code', client_id: issuer.clientId, redirect_uri: redirectUri, state: 's',
    })}`, { redirect: 'manual' });
    assert.equal(new URL(plain.headers.get('location')).searchParams.get('error'), 'invalid_request');
    const right = await codeFlow(issuer, redirectUri, pair);
    assert.equal(right.status, 200);
    // gpupool accepts the issuer's token and takes the user and roles from it.
    const me = await api(server.url, right.body.access_token).get('/api/version');
    assert.equal(me.user, ROSA.user);
    assert.deepEqual(me.roles, ROSA.roles);
  });

  test('logs in through the issuer with PKCE, lands on the overview and sees what the roles allow', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const page = await newPage('login');
    const views = new Map();
    page.on('response', async (r) => {
      const u = new URL(r.url());
      if (r.status() === 200 && u.pathname.startsWith('/api/views/')) views.set(u.pathname, await r.json().catch(() => null));
    });
    await logIn(page, '/');
    await page.waitForURL((u) => u.origin === server.url && u.pathname === '/');
    await page.waitForSelector('[data-testid="by-product"] tbody tr');
    assert.match(await page.textContent('[data-testid="me"]'), /rosa \(osmo-user, osmo-robotics\)/);
    const token = await page.evaluate(() => sessionStorage.getItem('gpupool.token'));
    assert.equal(token.split('.').length, 3, 'a JWT');
    assert.ok(!page.url().includes('code='), 'the code leaves the address bar');
    const events = await issuer.events();
    const authorize = events.filter((e) => e.endpoint === '/authorize' && e.approved === ROSA.user);
    assert.ok(authorize.length >= 1 && authorize.at(-1).code_challenge, JSON.stringify(events));
    assert.ok(events.some((e) => e.endpoint === '/token' && e.issued === ROSA.user));

    // Pools: only those the roles allow (an administrator sees more).
    await page.click('header nav >> text="Pools"');
    await page.waitForSelector('[data-testid="pools"] tbody tr[data-key]');
    const admin = await api(server.url, await tokenFor({ user: 'ada', roles: ['osmo-admin'] })).get('/api/views/pools');
    await eventually(async () => {
      const mine = views.get('/api/views/pools');
      assert.ok(mine);
      const shown = await page.$$eval('[data-testid="pools"] tbody tr[data-key]', (trs) => trs.map((tr) => tr.dataset.key));
      assert.deepEqual(shown, mine.pools.map((p) => p.name));
      assert.deepEqual(shown.filter((p) => p !== 'default' && !p.startsWith('robotics')), []);
      assert.ok(shown.some((p) => p.startsWith('robotics')), shown.join(', '));
      const hidden = admin.pools.map((p) => p.name).filter((p) => !shown.includes(p));
      assert.ok(hidden.length > 0, 'the administrator sees pools rosa does not');
    });
    await page.screenshot({ path: join(ensureShotDir(), 'oidc-pools.png') });

    // Logout ends the session at the issuer and comes back to the login page without a token.
    await page.click('[data-testid="me"] button');
    await page.waitForURL((u) => u.origin === server.url && u.pathname === '/login');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('gpupool.token')), null);
    const oidcUsers = await page.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith('oidc.user:')));
    assert.deepEqual(oidcUsers, []);
    const logout = (await issuer.events()).filter((e) => e.endpoint === '/logout');
    assert.equal(logout.at(-1)?.id_token_hint, true);
    await page.goto(`${server.url}/workflows`);
    await page.waitForURL((u) => u.pathname === '/login');
    await page.close();
    assert.deepEqual(consoleErrors.filter((e) => e.test === 'login'), []);
  });

  test('a wrong PKCE verifier: the issuer refuses the code and the dashboard says why', async (t) => {
    if (skipWithoutBrowser(t)) return;
    const page = await newPage('pkce');
    let tampered = false;
    await page.route(`${issuer.url}/token`, async (route) => {
      const form = new URLSearchParams(route.request().postData());
      form.set('code_verifier', pkcePair().verifier);
      tampered = true;
      await route.continue({ postData: form.toString() });
    });
    await logIn(page, '/pools');
    await page.waitForSelector('[data-testid="error"]');
    assert.ok(tampered);
    assert.match(await page.textContent('[data-testid="error"]'), /code_verifier does not match/);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('gpupool.token')), null);
    const events = await issuer.events();
    assert.equal(events.at(-1).error, 'invalid_grant');
    await page.close();
  });

  test('a token for another audience: gpupool refuses it and the dashboard says why', async (t) => {
    if (skipWithoutBrowser(t)) return;
    await issuer.settings({ audience: 'another-service' });
    try {
      const page = await newPage('audience');
      await logIn(page, '/');
      await page.waitForSelector('[data-testid="error"]');
      assert.match(await page.textContent('[data-testid="error"]'), /gpupool refused the token .*audience does not include "gpupool"/);
      assert.equal(await page.evaluate(() => sessionStorage.getItem('gpupool.token')), null);
      assert.equal(new URL(page.url()).pathname, '/callback');
      await page.close();
      const token = await tokenFor(ROSA);
      await assert.rejects(api(server.url, token).get('/api/views/overview'), (e) => e.status === 401);
    } finally {
      await issuer.settings({ audience: 'gpupool' });
    }
  });
});
