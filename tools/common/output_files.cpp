#include "output_files.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "npy.h"

namespace rudnn::tools {

namespace fs = std::filesystem;

namespace {

RuntimeError bad_path(const OutputFile& f, const std::string& expected, const std::string& actual) {
  return RuntimeError(ErrorKind::IoFailure, f.option, expected, fmt::format("\"{}\" ({})", f.path, actual));
}

fs::path directory_of(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// The previous contents of output i, kept (a hard link) in its staging directory while the
// outputs are renamed into place, so a failure part-way can put them back.
fs::path previous_of(const fs::path& stage) { return stage / "previous.npy"; }

// Undoes a failed write: the outputs already renamed into place get their previous contents back
// (or are removed when there was none), then the staging directories go.
void clean_up(const std::vector<fs::path>& stages, const std::vector<fs::path>& placed) {
  std::error_code ec;
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (fs::exists(previous_of(stages[i]), ec))
      fs::rename(previous_of(stages[i]), placed[i], ec);
    else
      fs::remove(placed[i], ec);
  }
  for (const auto& s : stages) fs::remove_all(s, ec);
}

}  // namespace

Status<RuntimeError> check_output_paths(const std::vector<OutputFile>& files) {
  std::vector<fs::path> seen;
  for (const OutputFile& f : files) {
    std::error_code ec;
    const fs::file_status st = fs::status(f.path, ec);
    if (fs::is_directory(st)) return bad_path(f, "a file path", "a directory");
    // A rename replaces whatever the path names: never a device or a pipe (e.g. /dev/null).
    if (fs::exists(st) && !fs::is_regular_file(st)) return bad_path(f, "a regular file path", "not a regular file");
    const fs::path dir = directory_of(f.path);
    if (!fs::is_directory(dir, ec))
      return bad_path(f, "a path in an existing directory", fmt::format("no directory {}", dir.string()));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      return bad_path(f, "a path in a writable directory", fmt::format("{} is not writable", dir.string()));
    const fs::path canonical = fs::weakly_canonical(f.path, ec);
    for (const auto& other : seen)
      if (!ec && other == canonical) return bad_path(f, "a file no other output writes", "already an output");
    seen.push_back(canonical);
  }
  return {};
}

Status<RuntimeError> write_npy_files(const std::vector<OutputFile>& files, const std::vector<const HostData*>& data) {
  std::vector<fs::path> stages, staged, placed;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const OutputFile& f = files[i];
    std::string pattern = (directory_of(f.path) / ".rudnn-output-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      clean_up(stages, placed);
      return bad_path(f, "a path in a writable directory", std::error_code(errno, std::generic_category()).message());
    }
    stages.emplace_back(pattern);
    staged.push_back(stages.back() / "output.npy");
    if (auto s = write_npy(staged.back().string(), *data[i]); !s.ok()) {
      clean_up(stages, placed);
      const RuntimeError& e = s.error();
      return RuntimeError(e.kind(), f.option, e.expected(), fmt::format("\"{}\" ({})", f.path, e.actual()), e.detail());
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    std::error_code absent;  // a target that does not exist yet has nothing to keep
    if (fs::is_regular_file(files[i].path, absent)) fs::create_hard_link(files[i].path, previous_of(stages[i]), ec);
    if (ec) {
      clean_up(stages, placed);
      return bad_path(files[i], "a path whose previous file can be kept until all outputs are written", ec.message());
    }
    fs::rename(staged[i], files[i].path, ec);
    if (ec) {
      clean_up(stages, placed);
      return bad_path(files[i], "a writable path", ec.message());
    }
    placed.emplace_back(files[i].path);
  }
  clean_up(stages, {});
  return {};
}

}  // namespace rudnn::tools
