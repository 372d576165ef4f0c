#pragma once
// Texts the codec's tests share.

namespace gpupool::codec::testing {

// Seed 000's a100_pod_template.json, verbatim (the text between `echo '` and `'`): the
// tolerations list is closed with `}` instead of `]`.
inline constexpr char kSeed000A100[] = R"({
    "a100": {
      "spec": {
        "nodeSelector": {
          "nvidia.com/gpu.product": "NVIDIA-A100"
        },
        "tolerations": [
          {
            "key": "nvidia.com/gpu.product",
            "operator": "Equal",
            "value": "NVIDIA-A100",
            "effect": "NoSchedule"
          }
        }
      }
    }
  })";

// Seed 002's a100_pod_template.json (the heredoc body), verbatim.
inline constexpr char kSeed002A100[] = R"({
  "a100": {
    "spec": {
      "nodeSelector": {
        "nvidia.com/gpu.product": "NVIDIA-A100"
      },
      "tolerations": [
        {
          "key": "nvidia.com/gpu.product",
          "operator": "Equal",
          "value": "NVIDIA-A100",
          "effect": "NoSchedule"
        }
      }
    }
  }
}
)";

}  // namespace gpupool::codec::testing
