// Login. `--auth dev`: a token typed into the login page (or passed once as `#token=`), kept in
// sessionStorage. `--auth oidc`: the issuer's authorization-code flow with PKCE (oidc-client-ts),
// configured from GET /api/ui/config (issuer, client id, scopes), which needs no token.
import { reactive } from 'vue';
import { UserManager, WebStorageStateStore } from 'oidc-client-ts';

const TOKEN_KEY = 'gpupool.token';

export const session = reactive({
  config: null, // GET /api/ui/config
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  user: '',
  roles: [],
});

export function takeTokenFromFragment() {
  const hash = window.location.hash;
  if (!hash.startsWith('#token=')) return;
  const token = decodeURIComponent(hash.slice('#token='.length));
  if (token) setToken(token);
  history.replaceState(null, '', window.location.pathname + window.location.search);
}

export function setToken(token) {
  session.token = token;
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export async function loadConfig() {
  if (session.config) return session.config;
  const response = await fetch('/api/ui/config', { headers: { Accept: 'application/json' } });
  if (!response.ok) throw new Error(`GET /api/ui/config: HTTP ${response.status}`);
  session.config = await response.json();
  return session.config;
}

let manager = null;
function oidcManager() {
  if (manager) return manager;
  const c = session.config;
  manager = new UserManager({
    authority: c.issuer,
    client_id: c.client_id,
    redirect_uri: `${window.location.origin}/callback`,
    post_logout_redirect_uri: `${window.location.origin}/login`,
    response_type: 'code', // with PKCE (S256), oidc-client-ts's default for the code flow
    scope: c.scopes || 'openid',
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
    stateStore: new WebStorageStateStore({ store: window.sessionStorage }),
    automaticSilentRenew: false,
  });
  return manager;
}

export async function startOidcLogin(returnTo) {
  await oidcManager().signinRedirect({ state: { returnTo: returnTo || '/' } });
}

// The redirect back from the issuer: exchanges the code (with the PKCE verifier) for tokens, then
// asks the server whether it accepts the token (issuer, audience, signature): a token the issuer
// gave but the server refuses ends the login here, with the server's reason, instead of sending
// the user round in circles between the pages and the login.
export async function finishOidcLogin() {
  const mgr = oidcManager();
  const user = await mgr.signinRedirectCallback();
  const which = session.config.token === 'id_token' ? user.id_token : user.access_token;
  const response = await fetch('/api/version', {
    headers: { Accept: 'application/json', Authorization: `Bearer ${which || ''}` },
  });
  if (!response.ok) {
    let message = `HTTP ${response.status}`;
    try {
      message = (await response.json()).message || message;
    } catch (e) {
      // not JSON: keep the status line
    }
    await mgr.removeUser();
    setToken('');
    throw new Error(`gpupool refused the token from ${session.config.issuer}: ${message}`);
  }
  setToken(which || '');
  return (user.state && user.state.returnTo) || '/';
}

// Forgets the token; with OIDC also ends the session at the issuer (its end_session_endpoint,
// which sends the browser back to /login), so the next login asks the issuer again.
export async function logout() {
  setToken('');
  session.user = '';
  session.roles = [];
  if (session.config && session.config.auth === 'oidc') {
    const mgr = oidcManager();
    const user = await mgr.getUser();
    const metadata = await mgr.metadataService.getMetadata().catch(() => ({}));
    if (user && metadata.end_session_endpoint) {
      await mgr.signoutRedirect({ id_token_hint: user.id_token });
      return true; // the browser is leaving for the issuer
    }
    await mgr.removeUser();
  }
  return false;
}

export function isAdmin() {
  return session.roles.includes('osmo-admin');
}

// A `#token=...` fragment (the URL `make run` prints) is read once, kept in sessionStorage and
// removed from the address bar when this module is first evaluated: before the router reads the
// location (router.js imports this module first). Fragments never reach the server's logs.
takeTokenFromFragment();
