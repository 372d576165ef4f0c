#include "kube/kubeconfig.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <vector>

#include "codec/yaml_reader.h"
#include "common/strings.h"
#include "model/input_file.h"

namespace gpupool::kube {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// One named entry of a kubeconfig (a cluster, user or context), with where it was defined.
struct Entry {
  Json body;
  std::string dir;   // of the file, for relative paths
  std::string path;  // "FILE: users[2].user", for messages
};

struct Merged {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
  std::string files;  // for messages
};

// Fields gpupool cannot honour: refusing is safer than connecting with other credentials.
constexpr const char* kRefusedUserFields[] = {"exec", "auth-provider", "username", "password",
                                              "as",   "as-uid",        "as-groups"};

Status ReadSection(const Json& doc, const std::string& file, const char* section,
                   const char* body_key, std::map<std::string, Entry>& out) {
  auto it = doc.find(section);
  if (it == doc.end() || it->is_null()) return OkStatus();
  if (!it->is_array()) return InvalidArgumentError(file + ": " + section + ": expected a list");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& item = (*it)[i];
    std::string path = file + ": " + section + "[" + std::to_string(i) + "]";
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) {
      return InvalidArgumentError(path + ".name: expected a string");
    }
    Json body = item.value(body_key, Json::object());
    if (!body.is_object()) return InvalidArgumentError(path + "." + body_key + ": expected a map");
    std::string name = item["name"].get<std::string>();
    // The first file to define a name wins (kubectl's merge).
    out.try_emplace(name,
                    Entry{body, fs::path(file).parent_path().string(), path + "." + body_key});
  }
  return OkStatus();
}

Status MergeFile(const std::string& file, Merged& merged) {
  ASSIGN_OR_RETURN(std::string text, model::ReadFile(file));
  ASSIGN_OR_RETURN(auto docs, codec::ParseJsonOrYamlDocuments(text, file));
  if (docs.empty() || docs[0].is_null()) return OkStatus();  // an empty file is allowed
  const Json& doc = docs[0];
  if (!doc.is_object()) return InvalidArgumentError(file + ": expected a kubeconfig (a map)");
  RETURN_IF_ERROR(ReadSection(doc, file, "clusters", "cluster", merged.clusters));
  RETURN_IF_ERROR(ReadSection(doc, file, "users", "user", merged.users));
  RETURN_IF_ERROR(ReadSection(doc, file, "contexts", "context", merged.contexts));
  if (merged.current_context.empty() && doc.contains("current-context") &&
      doc["current-context"].is_string()) {
    merged.current_context = doc["current-context"].get<std::string>();
  }
  merged.files += (merged.files.empty() ? "" : ", ") + file;
  return OkStatus();
}

std::string StringField(const Json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && it->is_string() ? it->get<std::string>() : "";
}

// `<field>-data` (base64 inline) or `<field>` (a file path, relative to the kubeconfig).
Result<std::string> ReadPem(const Entry& entry, const std::string& field) {
  std::string data = StringField(entry.body, (field + "-data").c_str());
  if (!data.empty()) {
    auto decoded = DecodeBase64(data);
    if (!decoded) return InvalidArgumentError(entry.path + "." + field + "-data: not base64");
    return *decoded;
  }
  std::string path = StringField(entry.body, field.c_str());
  if (path.empty()) return std::string();
  if (fs::path(path).is_relative()) path = (fs::path(entry.dir) / path).string();
  auto text = model::ReadFile(path);
  if (!text.ok()) return text.status().WithContext(entry.path + "." + field);
  return *text;
}

std::vector<std::string> Names(const std::map<std::string, Entry>& entries) {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries) names.push_back(name);
  return names;
}

Status ReadCluster(const Entry& cluster, RestConfig& config) {
  config.server = StringField(cluster.body, "server");
  if (config.server.empty()) return InvalidArgumentError(cluster.path + ".server: required");
  if (!StartsWith(config.server, "https://")) {
    return InvalidArgumentError(cluster.path + ".server: \"" + config.server +
                                "\": gpupool talks to the API server over https only");
  }
  if (cluster.body.contains("proxy-url")) {
    return InvalidArgumentError(cluster.path + ".proxy-url: proxies are not supported");
  }
  ASSIGN_OR_RETURN(config.ca_pem, ReadPem(cluster, "certificate-authority"));
  auto insecure = cluster.body.find("insecure-skip-tls-verify");
  config.insecure_skip_tls_verify =
      insecure != cluster.body.end() && insecure->is_boolean() && insecure->get<bool>();
  config.tls_server_name = StringField(cluster.body, "tls-server-name");
  return OkStatus();
}

Status ReadUser(const Entry& user, RestConfig& config) {
  for (const char* field : kRefusedUserFields) {
    if (user.body.contains(field)) {
      return InvalidArgumentError(user.path + "." + field +
                                  ": not supported; use a token, tokenFile or a client "
                                  "certificate");
    }
  }
  ASSIGN_OR_RETURN(config.client_cert_pem, ReadPem(user, "client-certificate"));
  ASSIGN_OR_RETURN(config.client_key_pem, ReadPem(user, "client-key"));
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return InvalidArgumentError(user.path +
                                ": client-certificate and client-key go together (one is missing)");
  }
  config.token = StringField(user.body, "token");
  std::string token_file = StringField(user.body, "tokenFile");
  if (!token_file.empty() && fs::path(token_file).is_relative()) {
    token_file = (fs::path(user.dir) / token_file).string();
  }
  config.token_file = token_file;
  return OkStatus();
}

std::string ReadTrimmed(const std::string& path) {
  auto text = model::ReadFile(path);
  return text.ok() ? std::string(Trim(*text)) : "";
}

}  // namespace

Environment Environment::Process() {
  Environment env;
  env.getenv = [](const std::string& name) {
    const char* value = std::getenv(name.c_str());
    return std::string(value ? value : "");
  };
  return env;
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string in;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ') in += c;
  }
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out(3 * in.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  if (n < 0) return std::nullopt;
  size_t pad = 0;
  if (!in.empty() && in.back() == '=') ++pad;
  if (in.size() > 1 && in[in.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

Result<RestConfig> LoadKubeconfig(const std::vector<std::string>& files,
                                  const std::string& context) {
  Merged merged;
  for (const std::string& file : files) RETURN_IF_ERROR(MergeFile(file, merged));
  std::string name = context.empty() ? merged.current_context : context;
  if (name.empty()) {
    return InvalidArgumentError(merged.files + ": no current-context; pass --context (contexts: " +
                                Join(Names(merged.contexts), ", ") + ")");
  }
  auto ctx = merged.contexts.find(name);
  if (ctx == merged.contexts.end()) {
    return NotFoundError(merged.files + ": context \"" + name + "\" not found" +
                         DidYouMean(name, Names(merged.contexts)) +
                         " (contexts: " + Join(Names(merged.contexts), ", ") + ")");
  }
  RestConfig config;
  config.source = merged.files + " (context " + name + ")";
  config.namespace_ = StringField(ctx->second.body, "namespace");
  std::string cluster = StringField(ctx->second.body, "cluster");
  auto c = merged.clusters.find(cluster);
  if (c == merged.clusters.end()) {
    return NotFoundError(ctx->second.path + ".cluster: no cluster named \"" + cluster + "\"" +
                         DidYouMean(cluster, Names(merged.clusters)));
  }
  RETURN_IF_ERROR(ReadCluster(c->second, config));
  std::string user = StringField(ctx->second.body, "user");
  if (!user.empty()) {
    auto u = merged.users.find(user);
    if (u == merged.users.end()) {
      return NotFoundError(ctx->second.path + ".user: no user named \"" + user + "\"" +
                           DidYouMean(user, Names(merged.users)));
    }
    RETURN_IF_ERROR(ReadUser(u->second, config));
  }
  return config;
}

Result<RestConfig> InClusterConfig(const Environment& env) {
  std::string host = env.getenv("KUBERNETES_SERVICE_HOST");
  std::string port = env.getenv("KUBERNETES_SERVICE_PORT");
  std::string token_file = env.service_account_dir + "/token";
  std::error_code ec;
  if (host.empty() || port.empty() || !fs::exists(token_file, ec)) {
    return NotFoundError(
        "not running in a pod (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT "
        "or " +
        token_file + " missing)");
  }
  RestConfig config;
  config.source = "in-cluster service account";
  config.server =
      "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  auto ca = model::ReadFile(env.service_account_dir + "/ca.crt");
  if (!ca.ok()) return ca.status().WithContext("in-cluster configuration");
  config.ca_pem = *ca;
  config.token_file = token_file;
  config.namespace_ = ReadTrimmed(env.service_account_dir + "/namespace");
  return config;
}

Result<RestConfig> ResolveRestConfig(const KubeconfigFlags& flags, const Environment& env) {
  if (!flags.kubeconfig.empty()) return LoadKubeconfig({flags.kubeconfig}, flags.context);
  if (flags.context.empty()) {
    auto in_cluster = InClusterConfig(env);
    if (in_cluster.ok() || in_cluster.status().code() != StatusCode::kNotFound) return in_cluster;
  }
  std::vector<std::string> files;
  for (const std::string& file : Split(env.getenv("KUBECONFIG"), ':')) {
    std::error_code ec;
    if (!file.empty() && fs::exists(file, ec)) files.push_back(file);
  }
  if (!files.empty()) return LoadKubeconfig(files, flags.context);
  std::string home = env.getenv("HOME");
  std::string fallback = home.empty() ? "" : home + "/.kube/config";
  std::error_code ec;
  if (!fallback.empty() && fs::exists(fallback, ec))
    return LoadKubeconfig({fallback}, flags.context);
  return NotFoundError(
      "no Kubernetes configuration: not in a pod, $KUBECONFIG names no file and ~/.kube/config "
      "does not exist; pass --kubeconfig FILE");
}

}  // namespace gpupool::kube
