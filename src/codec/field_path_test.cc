#include "codec/field_path.h"

#include <gtest/gtest.h>

#include "codec/json_reader.h"

namespace gpupool::codec {
namespace field_path_test {

using nlohmann::ordered_json;

TEST(FieldPathTest, BuildsPaths) {
  EXPECT_EQ(FieldPath("", "spec"), "spec");
  EXPECT_EQ(FieldPath("spec", "containers"), "spec.containers");
  EXPECT_EQ(IndexPath(FieldPath("spec", "containers"), 0), "spec.containers[0]");
  EXPECT_EQ(FieldPath(IndexPath("spec.containers", 2), "resources"),
            "spec.containers[2].resources");
  EXPECT_EQ(JsonTypeName(ordered_json::array()), "array");
  EXPECT_EQ(JsonTypeName(ordered_json(1.5)), "number");
}

}  // namespace field_path_test
}  // namespace gpupool::codec
