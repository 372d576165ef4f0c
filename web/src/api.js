// The REST API, with the bearer token. Errors carry the API's own message (a denied action says
// which roles were checked), shown as they are.
import { onBeforeUnmount, ref, shallowRef, watch, unref } from 'vue';
import { session, setToken } from './auth.js';
import { router } from './router.js';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function errorOf(response) {
  let message = `HTTP ${response.status}`;
  try {
    const body = await response.json();
    if (body && body.message) message = body.message;
  } catch (e) {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message);
}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  if (session.token) h.Authorization = `Bearer ${session.token}`;
  return h;
}

function onUnauthenticated() {
  setToken('');
  const here = router.currentRoute.value;
  if (here.name !== 'login') router.replace({ name: 'login', query: { next: here.fullPath } });
}

export async function apiGet(path) {
  const response = await fetch(path, { headers: headers() });
  if (response.status === 401) onUnauthenticated();
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

export async function apiSend(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) onUnauthenticated();
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

export const POLL_MS = 1500;

// Whether the tab is shown. A hidden tab (another tab in front, a minimised window) polls
// nothing: the server is spared, and the page catches up at once when it is shown again.
export function pageVisible() {
  return document.visibilityState !== 'hidden';
}

// Keeps `data` current: GET `path` now and every POLL_MS with If-None-Match, so an unchanged view
// costs a 304 and no re-render. `path` may be a ref or a function (re-fetched when it changes).
// Polling pauses while the tab is hidden. `data` is a shallow ref: each answer replaces it whole
// and no page changes it in place, so Vue need not wrap every row of a large answer in proxies.
export function usePoll(path, intervalMs = POLL_MS) {
  const data = shallowRef(null);
  const error = ref(null);
  const updatedAt = ref(0);
  let etag = '';
  let timer = null;
  let stopped = false;
  let paused = false;
  let generation = 0;
  const current = () => (typeof path === 'function' ? path() : unref(path));

  async function tick() {
    const target = current();
    const mine = generation;
    if (!target) return;
    try {
      const h = headers(etag ? { 'If-None-Match': etag } : {});
      const response = await fetch(target, { headers: h });
      if (mine !== generation) return;
      if (response.status === 401) onUnauthenticated();
      if (response.status === 304) {
        updatedAt.value = Date.now();
      } else if (!response.ok) {
        error.value = await errorOf(response);
      } else {
        etag = response.headers.get('ETag') || '';
        data.value = await response.json();
        error.value = null;
        updatedAt.value = Date.now();
      }
    } catch (e) {
      if (mine === generation) error.value = e;
    }
  }
  async function loop() {
    if (stopped) return;
    if (!pageVisible()) {
      paused = true; // onVisibility starts the loop again
      return;
    }
    await tick();
    if (!stopped) timer = setTimeout(loop, intervalMs);
  }
  function onVisibility() {
    if (stopped || !paused || !pageVisible()) return;
    paused = false;
    clearTimeout(timer);
    loop();
  }
  function restart() {
    generation += 1;
    etag = '';
    data.value = null;
    error.value = null;
    clearTimeout(timer);
    paused = false;
    loop();
  }
  watch(current, restart);
  document.addEventListener('visibilitychange', onVisibility);
  loop();
  onBeforeUnmount(() => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisibility);
  });
  return { data, error, updatedAt, refresh: tick };
}
