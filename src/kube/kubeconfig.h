#pragma once
// Where the Kubernetes client finds its API server and credentials, in client-go's order:
//   1. --kubeconfig FILE (with --context NAME, else the file's current-context);
//   2. in a pod: the service account (KUBERNETES_SERVICE_HOST/PORT, and token, ca.crt and
//      namespace under /var/run/secrets/kubernetes.io/serviceaccount);
//   3. $KUBECONFIG: a ':'-separated list of files, merged as kubectl does (the first file to
//      name a cluster, user or context wins; current-context from the first file that sets it);
//   4. ~/.kube/config.
// From a kubeconfig: clusters[].cluster.{server, certificate-authority(-data),
// insecure-skip-tls-verify, tls-server-name}, users[].user.{client-certificate(-data),
// client-key(-data), token, tokenFile}, contexts[].context.{cluster, user, namespace}. Relative
// file paths are relative to the kubeconfig that names them. Credential plugins (exec,
// auth-provider) and basic auth are refused with the field named: gpupool cannot run them.
// Errors name the file and the field path; an unknown context has a did-you-mean.

#include <functional>
#include <string>

#include "common/status.h"

namespace gpupool::kube {

// What a client needs to reach one API server (client-go's rest.Config).
struct RestConfig {
  std::string server;  // https://host:port
  std::string ca_pem;  // CA certificates (PEM); "" = the system's trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI and certificate name; "" = the server's host
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;
  std::string token_file;  // read again on use: projected service-account tokens rotate
  std::string namespace_;  // the context's namespace ("" when none)
  std::string source;      // where this came from, for messages: "in-cluster", "FILE (context X)"
};

// The process's view of its environment (injected so tests need no real home or pod).
struct Environment {
  std::function<std::string(const std::string&)> getenv;  // "" when unset
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  static Environment Process();
};

// --kubeconfig and --context ("" = unset).
struct KubeconfigFlags {
  std::string kubeconfig;
  std::string context;
};

// Resolves the configuration in the order above.
Result<RestConfig> ResolveRestConfig(const KubeconfigFlags& flags, const Environment& env);

// Reads kubeconfig files (merged in order) and picks `context` ("" = current-context).
Result<RestConfig> LoadKubeconfig(const std::vector<std::string>& files,
                                  const std::string& context);

// The in-cluster configuration; kNotFound when not in a pod.
Result<RestConfig> InClusterConfig(const Environment& env);

// Decodes standard base64 (as the *-data fields are written); nullopt when malformed.
std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace gpupool::kube
