#!/usr/bin/env python3
"""A fake OpenID Connect issuer for the dashboard's browser tests (web/tests/oidc.test.mjs).

It implements what `gpupool serve --auth oidc` and the dashboard's login (oidc-client-ts, the
authorization-code flow with PKCE) use, on 127.0.0.1 only, and nothing else:

  GET  /.well-known/openid-configuration   discovery (RFC 8414 / OIDC Discovery 1.0)
  GET  /jwks                               the public key, as a JWKS
  GET  /authorize                          approves the configured user at once (no login form)
                                           and redirects back with a one-time code; refuses a
                                           request without an S256 code challenge (RFC 7636)
  POST /token                              exchanges the code when the client, the redirect URI
                                           and the PKCE verifier match; RS256 access and ID tokens
  GET  /logout                             end session: redirects to post_logout_redirect_uri

The RSA key is generated at start-up with the `openssl` command into a private temporary
directory (removed at exit), and tokens are signed with `openssl dgst -sha256 -sign`: nothing but
Python's standard library and the openssl CLI.

What the tests change while it runs (JSON bodies, loopback only):
  POST /_test/settings  {"user", "roles", "audience", "redirect_uris", "token_lifetime"}
  GET  /_test/events    what it was asked and what it answered, oldest first

  fake_oidc_issuer.py [--client-id ID] [--audience AUD] [--user NAME] [--roles a,b]
It prints "fake-oidc-issuer: listening on http://127.0.0.1:PORT" once it accepts connections.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CODE_LIFETIME_SECONDS = 60
# RFC 7636 section 4.1: 43 to 128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~".
VERIFIER = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class Key:
    """An RSA key made by openssl in a private directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="fake-oidc-")
        os.chmod(self.dir, 0o700)
        self.path = os.path.join(self.dir, "key.pem")
        subprocess.run(
            ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
             "-out", self.path],
            check=True, capture_output=True)
        text = subprocess.run(["openssl", "rsa", "-in", self.path, "-noout", "-text"],
                              check=True, capture_output=True, text=True).stdout
        modulus = subprocess.run(["openssl", "rsa", "-in", self.path, "-noout", "-modulus"],
                                 check=True, capture_output=True, text=True).stdout
        n = int(modulus.strip().split("=", 1)[1], 16)
        e = int(re.search(r"publicExponent: (\d+)", text).group(1))
        self.kid = b64url(hashlib.sha256(str(n).encode()).digest()[:12])
        self.jwk = {
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
            "n": b64url(n.to_bytes((n.bit_length() + 7) // 8, "big")),
            "e": b64url(e.to_bytes((e.bit_length() + 7) // 8, "big")),
        }

    def sign(self, claims: dict) -> str:
        header = {"alg": "RS256", "typ": "JWT", "kid": self.kid}
        signing_input = (b64url(json.dumps(header).encode()) + "." +
                         b64url(json.dumps(claims).encode())).encode("ascii")
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.path],
                                   input=signing_input, check=True, capture_output=True).stdout
        return signing_input.decode("ascii") + "." + b64url(signature)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Issuer:
    def __init__(self, args, key: Key):
        self.key = key
        self.url = ""  # set once the port is known
        self.client_id = args.client_id
        self.lock = threading.Lock()
        self.settings = {
            "user": args.user,
            "roles": [r for r in args.roles.split(",") if r],
            "audience": args.audience,
            "redirect_uris": [],
            "token_lifetime": 300,
        }
        self.codes = {}  # code -> what /authorize was asked
        self.events = []

    def event(self, **fields):
        with self.lock:
            self.events.append({"at": time.time(), **fields})

    def discovery(self):
        return {
            "issuer": self.url,
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "jwks_uri": self.url + "/jwks",
            "end_session_endpoint": self.url + "/logout",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": ["openid", "profile"],
        }


class Handler(BaseHTTPRequestHandler):
    issuer: Issuer = None  # set before serving
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the tests read /_test/events
        pass

    # ---- replies ----
    def reply(self, status, body=b"", content_type="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        # The dashboard fetches discovery, keys and tokens from another origin.
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Cache-Control", "no-store")
        if body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def redirect(self, location):
        self.reply(302, headers=[("Location", location)])

    def oauth_error(self, status, error, description):
        self.issuer.event(endpoint=urllib.parse.urlparse(self.path).path, error=error,
                          description=description)
        self.reply(status, {"error": error, "error_description": description})

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # ---- methods ----
    def do_OPTIONS(self):
        self.reply(204, headers=[("Access-Control-Allow-Methods", "GET, POST"),
                                 ("Access-Control-Allow-Headers", "Content-Type, Authorization")])

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        routes = {
            "/.well-known/openid-configuration": lambda: self.reply(200, self.issuer.discovery()),
            "/jwks": lambda: self.reply(200, {"keys": [self.issuer.key.jwk]}),
            "/authorize": lambda: self.authorize(query),
            "/logout": lambda: self.logout(query),
            "/_test/events": lambda: self.reply(200, self.issuer.events),
        }
        handler = routes.get(url.path)
        if handler is None:
            return self.reply(404, {"error": "not_found"})
        handler()

    def do_POST(self):
        path = urllib.parse.urlparse(self.path).path
        if path == "/token":
            return self.token(dict(urllib.parse.parse_qsl(self.body().decode("utf-8"))))
        if path == "/_test/settings":
            changes = json.loads(self.body() or b"{}")
            with self.issuer.lock:
                self.issuer.settings.update(changes)
                settings = dict(self.issuer.settings)
            return self.reply(200, settings)
        self.reply(404, {"error": "not_found"})

    # ---- the flow ----
    def authorize(self, q):
        issuer = self.issuer
        redirect_uri = q.get("redirect_uri", "")
        with issuer.lock:
            settings = dict(issuer.settings)
        # A redirect URI not registered gets no redirect (RFC 6749 section 4.1.2.1).
        if q.get("client_id") != issuer.client_id or redirect_uri not in settings["redirect_uris"]:
            issuer.event(endpoint="/authorize", error="invalid_client_or_redirect_uri",
                         client_id=q.get("client_id"), redirect_uri=redirect_uri)
            return self.reply(400, "unknown client or redirect_uri", "text/plain")

        def back(params):
            params = {**params, "state": q["state"]} if "state" in q else params
            self.redirect(redirect_uri + "?" + urllib.parse.urlencode(params))

        if q.get("response_type") != "code":
            issuer.event(endpoint="/authorize", error="unsupported_response_type")
            return back({"error": "unsupported_response_type"})
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            issuer.event(endpoint="/authorize", error="invalid_request",
                         description="PKCE with S256 is required")
            return back({"error": "invalid_request",
                         "error_description": "PKCE with code_challenge_method=S256 is required"})
        code = secrets.token_urlsafe(24)
        with issuer.lock:
            issuer.codes[code] = {
                "client_id": q["client_id"], "redirect_uri": redirect_uri,
                "challenge": q["code_challenge"], "nonce": q.get("nonce"),
                "scope": q.get("scope", "openid"), "user": settings["user"],
                "roles": list(settings["roles"]), "audience": settings["audience"],
                "lifetime": int(settings["token_lifetime"]),
                "expires": time.time() + CODE_LIFETIME_SECONDS,
            }
        issuer.event(endpoint="/authorize", approved=settings["user"],
                     code_challenge=q["code_challenge"], scope=q.get("scope"))
        back({"code": code, "iss": issuer.url})

    def token(self, form):
        issuer = self.issuer
        if form.get("grant_type") != "authorization_code":
            return self.oauth_error(400, "unsupported_grant_type", "only authorization_code")
        with issuer.lock:
            grant = issuer.codes.pop(form.get("code", ""), None)  # a code is used once
        if grant is None or grant["expires"] < time.time():
            return self.oauth_error(400, "invalid_grant", "unknown, used or expired code")
        if form.get("client_id") != grant["client_id"]:
            return self.oauth_error(400, "invalid_client", "client_id differs from the code's")
        if form.get("redirect_uri") != grant["redirect_uri"]:
            return self.oauth_error(400, "invalid_grant", "redirect_uri differs from the code's")
        verifier = form.get("code_verifier", "")
        if not VERIFIER.match(verifier):
            return self.oauth_error(400, "invalid_grant", "code_verifier missing or malformed")
        if b64url(hashlib.sha256(verifier.encode("ascii")).digest()) != grant["challenge"]:
            return self.oauth_error(400, "invalid_grant", "code_verifier does not match the "
                                    "code_challenge")
        now = int(time.time())
        common = {"iss": issuer.url, "sub": grant["user"], "iat": now, "nbf": now,
                  "exp": now + grant["lifetime"], "preferred_username": grant["user"]}
        access = {**common, "aud": grant["audience"], "azp": grant["client_id"],
                  "scope": grant["scope"], "roles": grant["roles"]}
        identity = {**common, "aud": grant["client_id"], "auth_time": now}
        if grant["nonce"]:
            identity["nonce"] = grant["nonce"]
        issuer.event(endpoint="/token", issued=grant["user"], audience=grant["audience"])
        self.reply(200, {
            "access_token": issuer.key.sign(access),
            "id_token": issuer.key.sign(identity),
            "token_type": "Bearer",
            "expires_in": grant["lifetime"],
            "scope": grant["scope"],
        })

    def logout(self, q):
        issuer = self.issuer
        target = q.get("post_logout_redirect_uri", "")
        with issuer.lock:
            origins = {urllib.parse.urlparse(u)[:2] for u in issuer.settings["redirect_uris"]}
        issuer.event(endpoint="/logout", id_token_hint=bool(q.get("id_token_hint")),
                     post_logout_redirect_uri=target)
        if target and urllib.parse.urlparse(target)[:2] in origins:
            suffix = "?" + urllib.parse.urlencode({"state": q["state"]}) if "state" in q else ""
            return self.redirect(target + suffix)
        self.reply(200, "logged out", "text/plain")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client-id", default="gpupool-dashboard")
    parser.add_argument("--audience", default="gpupool")
    parser.add_argument("--user", default="alice")
    parser.add_argument("--roles", default="osmo-user")
    args = parser.parse_args()

    key = Key()
    try:
        issuer = Issuer(args, key)
        Handler.issuer = issuer
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
        print(f"fake-oidc-issuer: listening on {issuer.url}", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    finally:
        key.remove()


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    main()
