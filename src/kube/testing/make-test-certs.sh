#!/usr/bin/env bash
# Writes a throwaway PKI for the fake API server into DIR (openssl CLI only):
#   ca.crt ca.key          a self-signed CA
#   server.crt server.key  the server's certificate, for 127.0.0.1 and localhost, signed by the CA
#   client.crt client.key  a client certificate signed by the CA (CN gpupool-test)
#   token                  a random bearer token
# Used by the tests and benchmarks; nothing here is a secret outside them.
set -euo pipefail
dir=${1:?usage: make-test-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
quiet() { "$@" >/dev/null 2>&1 || { "$@"; exit 1; }; }
quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=gpupool-test-ca" \
  -keyout ca.key -out ca.crt
cat > server.ext <<'EXT'
subjectAltName = IP:127.0.0.1, DNS:localhost
extendedKeyUsage = serverAuth
EXT
quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=fake-apiserver" -keyout server.key -out server.csr
quiet openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.crt
printf 'extendedKeyUsage = clientAuth\n' > client.ext
quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/O=system:masters/CN=gpupool-test" \
  -keyout client.key -out client.csr
quiet openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
  -extfile client.ext -out client.crt
openssl rand -hex 24 > token
rm -f server.csr client.csr server.ext client.ext ca.srl
