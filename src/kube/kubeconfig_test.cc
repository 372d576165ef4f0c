#include "kube/kubeconfig.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace gpupool::kube {
namespace kubeconfig_test {

namespace fs = std::filesystem;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("gpupool-kubeconfig-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  Environment Env(std::map<std::string, std::string> vars) {
    Environment env;
    env.getenv = [vars](const std::string& name) {
      auto it = vars.find(name);
      return it == vars.end() ? std::string() : it->second;
    };
    env.service_account_dir = (dir_ / "serviceaccount").string();
    return env;
  }

  fs::path dir_;
};

// "hello" in base64.
constexpr char kConfig[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: aGVsbG8=
- name: prod-cluster
  cluster:
    server: https://prod.example.com
    certificate-authority: certs/ca.pem
    tls-server-name: api.prod
users:
- name: dev-user
  user:
    token: abc
- name: prod-user
  user:
    client-certificate: certs/client.pem
    client-key-data: aGVsbG8=
- name: robot
  user:
    tokenFile: robot-token
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
- name: prod
  context: {cluster: prod-cluster, user: prod-user}
- name: robot
  context: {cluster: dev-cluster, user: robot}
)";

TEST_F(KubeconfigTest, ReadsContextsClustersAndUsers) {
  Write("certs/ca.pem", "CA PEM");
  Write("certs/client.pem", "CLIENT PEM");
  std::string file = Write("config", kConfig);

  auto dev = LoadKubeconfig({file}, "");
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_EQ(dev->server, "https://10.0.0.1:6443");
  EXPECT_EQ(dev->ca_pem, "hello");
  EXPECT_EQ(dev->token, "abc");
  EXPECT_EQ(dev->namespace_, "team-a");

  auto prod = LoadKubeconfig({file}, "prod");
  ASSERT_TRUE(prod.ok()) << prod.status().message();
  EXPECT_EQ(prod->ca_pem, "CA PEM");  // relative to the kubeconfig's directory
  EXPECT_EQ(prod->tls_server_name, "api.prod");
  EXPECT_EQ(prod->client_cert_pem, "CLIENT PEM");
  EXPECT_EQ(prod->client_key_pem, "hello");
  EXPECT_EQ(prod->token, "");

  auto robot = LoadKubeconfig({file}, "robot");
  ASSERT_TRUE(robot.ok());
  EXPECT_EQ(robot->token_file, (dir_ / "robot-token").string());
}

TEST_F(KubeconfigTest, ExplainsWhatIsWrong) {
  struct Case {
    std::string name;
    std::string config;
    std::string context;
    std::string message;
  };
  const std::string cluster =
      "clusters:\n- name: c\n  cluster: {server: https://h:1}\ncontexts:\n"
      "- name: x\n  context: {cluster: c, user: u}\n";
  std::vector<Case> cases = {
      {"unknown context", kConfig, "prd", "context \"prd\" not found (did you mean \"prod\"?)"},
      {"exec plugin", cluster + "users:\n- name: u\n  user:\n    exec: {command: aws}\n", "x",
       "users[0].user.exec: not supported"},
      {"basic auth", cluster + "users:\n- name: u\n  user: {username: a, password: b}\n", "x",
       "users[0].user.username: not supported"},
      {"http server",
       "clusters:\n- name: c\n  cluster: {server: http://h:1}\ncontexts:\n- name: x\n"
       "  context: {cluster: c}\n",
       "x", "over https only"},
      {"missing user", cluster, "x", "contexts[0].context.user: no user named \"u\""},
      {"no current context", cluster, "", "no current-context; pass --context (contexts: x)"},
      {"cert without key",
       cluster + "users:\n- name: u\n  user: {client-certificate-data: aGVsbG8=}\n", "x",
       "client-certificate and client-key go together"},
      {"bad base64", cluster + "users:\n- name: u\n  user: {client-key-data: '!!'}\n", "x",
       "client-key-data: not base64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string file = Write("bad-config", c.config);
    auto config = LoadKubeconfig({file}, c.context);
    ASSERT_FALSE(config.ok());
    EXPECT_NE(config.status().message().find(c.message), std::string::npos)
        << config.status().message();
    EXPECT_NE(config.status().message().find(file), std::string::npos) << config.status().message();
  }
}

TEST_F(KubeconfigTest, ResolvesInClientGoOrder) {
  std::string first = Write("first", R"(current-context: a
clusters: [{name: c1, cluster: {server: "https://first:1"}}]
contexts: [{name: a, context: {cluster: c1}}, {name: shared, context: {cluster: c1}}])");
  std::string second = Write("second", R"(current-context: b
clusters: [{name: c2, cluster: {server: "https://second:2"}}]
contexts: [{name: b, context: {cluster: c2}}, {name: shared, context: {cluster: c2}}])");
  std::string home_config = Write("home/.kube/config", R"(current-context: h
clusters: [{name: c, cluster: {server: "https://home:3"}}]
contexts: [{name: h, context: {cluster: c}}])");
  Write("serviceaccount/token", "sa-token\n");
  Write("serviceaccount/ca.crt", "SA CA");
  Write("serviceaccount/namespace", "gpupool\n");
  const std::string home = (dir_ / "home").string();
  const std::string kubeconfig = first + ":" + (dir_ / "missing").string() + ":" + second;

  struct Case {
    std::string name;
    KubeconfigFlags flags;
    std::map<std::string, std::string> env;
    std::string server;
  };
  std::vector<Case> cases = {
      {"flag wins over everything",
       {second, ""},
       {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
       "https://second:2"},
      {"in a pod",
       {},
       {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
        {"KUBERNETES_SERVICE_PORT", "443"},
        {"KUBECONFIG", first}},
       "https://10.96.0.1:443"},
      {"in a pod, IPv6",
       {},
       {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
       "https://[fd00::1]:443"},
      {"KUBECONFIG list: current-context of the first",
       {},
       {{"KUBECONFIG", kubeconfig}},
       "https://first:1"},
      {"KUBECONFIG list: the context of a later file",
       {"", "b"},
       {{"KUBECONFIG", kubeconfig}},
       "https://second:2"},
      {"KUBECONFIG list: first definition wins",
       {"", "shared"},
       {{"KUBECONFIG", kubeconfig}},
       "https://first:1"},
      {"--context skips the service account",
       {"", "h"},
       {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
        {"KUBERNETES_SERVICE_PORT", "443"},
        {"HOME", home}},
       "https://home:3"},
      {"home", {}, {{"HOME", home}}, "https://home:3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto config = ResolveRestConfig(c.flags, Env(c.env));
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_EQ(config->server, c.server);
  }
  auto pod = ResolveRestConfig(
      {}, Env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->ca_pem, "SA CA");
  EXPECT_EQ(pod->token_file, (dir_ / "serviceaccount/token").string());
  EXPECT_EQ(pod->namespace_, "gpupool");

  auto nothing = ResolveRestConfig({}, Env({{"HOME", (dir_ / "nobody").string()}}));
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(nothing.status().message().find("pass --kubeconfig FILE"), std::string::npos);
  (void)home_config;
}

TEST(Base64Test, DecodesStandardBase64) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(DecodeBase64("aGVsbG8h"), "hello!");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8="), "hello");
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_FALSE(DecodeBase64("abc").has_value());
  EXPECT_FALSE(DecodeBase64("!!!!").has_value());
}

}  // namespace kubeconfig_test
}  // namespace gpupool::kube
