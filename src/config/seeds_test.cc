// The JSON examples of seeds 000-002 as fixtures (src/config/testdata/, see its README): the
// valid ones load with the seeds' commands (name on the command line or not); the malformed ones
// fail at their true line and column.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "codec/json_reader.h"
#include "config/access.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "config/merge.h"

namespace gpupool::config {
namespace seeds_test {

std::string TestData(const std::string& rel) {
  return std::string(GPUPOOL_SOURCE_DIR) + "/src/config/testdata/" + rel;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `config update KIND [NAME] --file FILE` on a ConfigSet: parse, split, decode.
Status Load(ConfigSet& set, Kind kind, const std::string& rel,
            std::optional<std::string> cli_name) {
  std::string file = rel.substr(rel.find('/') + 1);
  ASSIGN_OR_RETURN(Json doc, codec::ParseJson(ReadText(TestData(rel)), file));
  ASSIGN_OR_RETURN(std::vector<NamedBody> bodies, SplitConfigFile(kind, doc, cli_name));
  for (const NamedBody& nb : bodies) RETURN_IF_ERROR(PutConfig(set, kind, nb.name, nb.body));
  return OkStatus();
}

TEST(SeedFixturesTest, ValidExamplesLoad) {
  struct Case {
    std::string file;
    Kind kind;
    std::optional<std::string> cli_name;  // as the seed's command gives it
    std::vector<std::string> names;       // configs it defines
  };
  std::vector<Case> cases = {
      // seed 000
      {"seed000/l40s_pod_template.json", Kind::kPodTemplate, "l40s", {"l40s"}},
      {"seed000/platform_config.json",
       Kind::kPool,
       "shared_simulation_training_pool",
       {"shared_simulation_training_pool"}},
      {"seed000/role_config.json", Kind::kRole, "osmo-shared", {"osmo-shared"}},
      // seed 001: `osmo config update POOL --file F` (map form, no name)
      {"seed001/robotics_training.json", Kind::kPool, std::nullopt, {"robotics-training"}},
      {"seed001/robotics_simulation.json", Kind::kPool, std::nullopt, {"robotics-simulation"}},
      {"seed001/robotics_inference.json", Kind::kPool, std::nullopt, {"robotics-inference"}},
      {"seed001/team_development.json", Kind::kPool, std::nullopt, {"team-development"}},
      // seed 002
      {"seed002/l40s_pod_template.json", Kind::kPodTemplate, "l40s", {"l40s"}},
      {"seed002/platform_config.json", Kind::kPool, "heterogeneous_pool", {"heterogeneous_pool"}},
      {"seed002/robotics_inference.json", Kind::kPool, std::nullopt, {"robotics-inference"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    ConfigSet set;
    Status s = Load(set, c.kind, c.file, c.cli_name);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(ConfigNames(set, c.kind).size(), c.names.size());
    for (const std::string& name : c.names) {
      Result<Json> body = GetConfigBody(set, c.kind, name);
      ASSERT_TRUE(body.ok()) << name;
      // Stored bodies decode again to the same JSON (round trip).
      ConfigSet again;
      ASSERT_TRUE(PutConfig(again, c.kind, name, *body).ok());
      EXPECT_EQ(GetConfigBody(again, c.kind, name)->dump(), body->dump());
    }
  }
}

TEST(SeedFixturesTest, MalformedExamplesFailAtTheirTrueLineAndColumn) {
  struct Case {
    std::string file;
    std::string position;  // "<file>:<line>:<column>: "
  };
  std::vector<Case> cases = {
      {"seed000/a100_pod_template.json", "a100_pod_template.json:14:7: "},
      {"seed002/a100_pod_template.json", "a100_pod_template.json:14:7: "},
      {"seed002/robotics_training.json", "robotics_training.json:36:1: "},
      {"seed002/robotics_simulation.json", "robotics_simulation.json:42:1: "},
      {"seed001/template_inheritance_snippet.json", "template_inheritance_snippet.json:3:27: "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    ConfigSet set;
    Status s = Load(
        set, c.file.find("template.json") != std::string::npos ? Kind::kPodTemplate : Kind::kPool,
        c.file, std::nullopt);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message().rfind(c.position, 0), 0u) << s.message();
    EXPECT_TRUE(set.pools.empty() && set.pod_templates.empty());
  }
}

// Seed 000 end to end: built-ins + both templates (a100 corrected) + the pool + the role.
TEST(SeedFixturesTest, Seed000PoolReferencesResolve) {
  ConfigSet set = BuiltinConfigs();
  ASSERT_TRUE(Load(set, Kind::kPodTemplate, "seed000/l40s_pod_template.json", "l40s").ok());
  ASSERT_TRUE(
      Load(set, Kind::kPool, "seed000/platform_config.json", "shared_simulation_training_pool")
          .ok());
  // Without the a100 template the pool's reference dangles, naming field and pool.
  std::vector<Status> errors = ValidateReferenceList(set);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message(),
            "pool \"shared_simulation_training_pool\": "
            "platforms.a100_platform.override_pod_template[0]: pod template \"a100\" does not "
            "exist");
  // The corrected a100 template (`]` closing the tolerations).
  std::string fixed = ReadText(TestData("seed000/a100_pod_template.json"));
  size_t bad = fixed.find("        }\n      }\n");
  ASSERT_NE(bad, std::string::npos);
  fixed.replace(bad, 17, "        }\n      ]\n");
  Result<Json> doc = codec::ParseJson(fixed, "a100_fixed.json");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  auto bodies = SplitConfigFile(Kind::kPodTemplate, *doc, "a100");
  ASSERT_TRUE(bodies.ok());
  ASSERT_TRUE(PutConfig(set, Kind::kPodTemplate, "a100", (*bodies)[0].body).ok());
  EXPECT_TRUE(ValidateReferences(set).ok()) << ValidateReferences(set).ToString();
  ASSERT_TRUE(Load(set, Kind::kRole, "seed000/role_config.json", "osmo-shared").ok());

  const Pool& pool = set.pools.at("shared_simulation_training_pool");
  Result<Json> a100 = PlatformTemplate(pool, "a100_platform", set);
  ASSERT_TRUE(a100.ok()) << a100.status().ToString();
  EXPECT_EQ((*a100)["spec"]["nodeSelector"]["nvidia.com/gpu.product"], "NVIDIA-A100");
  EXPECT_EQ((*a100)["spec"]["tolerations"][0]["value"], "NVIDIA-A100");
  EXPECT_EQ((*a100)["spec"]["containers"].size(), 2u);  // default_user + default_ctrl

  // The seed's role lets a user submit to the pool and read their profile, nothing else.
  std::vector<std::string> roles = {"osmo-shared"};
  EXPECT_TRUE(
      CheckAccess(roles, "POST", "/api/pool/shared_simulation_training_pool/workflow", set).ok());
  EXPECT_TRUE(CheckAccess(roles, "GET", "/api/profile/settings", set).ok());
  EXPECT_FALSE(CheckAccess(roles, "POST", "/api/pool/heterogeneous_pool/workflow", set).ok());
  EXPECT_FALSE(CheckAccess(roles, "GET", "/api/pool/shared_simulation_training_pool", set).ok());
}

}  // namespace seeds_test
}  // namespace gpupool::config
