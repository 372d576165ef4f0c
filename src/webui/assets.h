#pragma once
// The web dashboard's files (Vite's build output of web/), embedded into the binary at build
// time by cmake/embed_assets.cmake. Built with -DGPUPOOL_WITH_WEB=OFF, the table holds a single
// /index.html saying so. The server's UI routes (api/ui_routes.h) serve them.
//
// Thread contract: constant data; read from any thread.

#include <span>
#include <string_view>

namespace gpupool::webui {

struct Asset {
  std::string_view path;          // "/index.html", "/assets/index-3f2a1b.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view etag;          // a strong ETag, quoted: "\"1f3a...\"" (content hash)
  std::string_view body;
  // Fingerprinted by the bundler (its name changes with its content): cached for a year.
  bool immutable = false;
};

// Sorted by path.
std::span<const Asset> Assets();

// False when built with GPUPOOL_WITH_WEB=OFF.
bool BuiltWithDashboard();

}  // namespace gpupool::webui
