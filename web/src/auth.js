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

// The redirect back from the issuer: exchanges the code (with the PKCE verifier) for tokens.
export async function finishOidcLogin() {
  const user = await oidcManager().signinRedirectCallback();
  const which = session.config.token === 'id_token' ? user.id_token : user.access_token;
  setToken(which || '');
  return (user.state && user.state.returnTo) || '/';
}

export async function logout() {
  setToken('');
  session.user = '';
  session.roles = [];
  if (session.config && session.config.auth === 'oidc' && manager) {
    await manager.removeUser();
  }
}

export function isAdmin() {
  return session.roles.includes('osmo-admin');
}

// A `#token=...` fragment (the URL `make run` prints) is read once, kept in sessionStorage and
// removed from the address bar when this module is first evaluated: before the router reads the
// location (router.js imports this module first). Fragments never reach the server's logs.
takeTokenFromFragment();
