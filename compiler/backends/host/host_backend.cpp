#include "backends/host/host_backend.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "templates/embedded.h"

extern char** environ;

namespace rudnn::compiler::host_cc {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string unique_suffix() {
  std::random_device rd;
  return fmt::format("{}.{:x}", ::getpid(), (std::uint64_t(rd()) << 32) | rd());
}

// Runs argv, stdout+stderr into `log`; returns the exit status (-1 if it could not start).
int run(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Writes `text` to `path` atomically (a temporary renamed over it): a reader sees the old file or
// the new one, never a half-written header.
bool write_atomically(const fs::path& path, std::string_view text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp." + unique_suffix();
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

// The embedded templates, written once per content hash under work_dir (atomically: a complete
// tree appears under its final name or not at all). The tree lives in a cache directory that
// anything may damage (a full disk, a truncated copy, a user's edit), so every use checks each
// file against the embedded text and repairs the ones that differ, as corrupt kernel entries are
// rebuilt: a damaged header must never turn into "every host compile fails from now on".
Result<std::string, RuntimeError> template_dir(const std::string& work_dir) {
  const fs::path final_dir = fs::path(work_dir) / "templates" / std::string(templates::content_hash());
  std::error_code ec;
  // A tree missing only its marker (deleted by hand) is repaired in place below, not replaced.
  if (!fs::exists(final_dir / ".complete") && !fs::is_directory(final_dir)) {
    const fs::path tmp = final_dir.string() + ".tmp." + unique_suffix();
    bool written = true;
    for (const auto& f : templates::embedded_files()) written = written && write_atomically(tmp / f.path, f.text);
    written = written && write_atomically(tmp / ".complete", "ok");
    if (written) fs::rename(tmp, final_dir, ec);
    if (!written || ec) fs::remove_all(tmp, ec);  // another process won the race: use its tree
    if (!fs::is_directory(final_dir))
      return RuntimeError(ErrorKind::IoFailure, "template directory", "a writable directory", final_dir.string());
  }
  for (const auto& f : templates::embedded_files()) {
    const fs::path p = final_dir / f.path;
    if (read_file(p) == f.text) continue;
    if (!write_atomically(p, f.text))
      return RuntimeError(ErrorKind::IoFailure, "template " + p.string(), "a writable file (to repair it)",
                          "a failed write");
  }
  if (!fs::exists(final_dir / ".complete") && !write_atomically(final_dir / ".complete", "ok"))
    return RuntimeError(ErrorKind::IoFailure, "template directory", "a writable directory", final_dir.string());
  return final_dir.string();
}

}  // namespace

std::string compiler_path() {
  if (const char* c = std::getenv("RUDNN_HOST_CXX"); c && *c) return c;
  return RUDNN_HOST_CXX_DEFAULT;
}

const std::vector<std::string>& options() {
  static const std::vector<std::string> opts = [] {
    std::vector<std::string> o = {"-std=c++20", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-g0"};
    std::istringstream extra(RUDNN_HOST_KERNEL_FLAGS);
    for (std::string f; extra >> f;) o.push_back(f);
    return o;
  }();
  return opts;
}

Result<std::string, RuntimeError> compiler_version() {
  static std::mutex mutex;
  static std::string cached;
  std::lock_guard lock(mutex);
  if (!cached.empty()) return cached;
  const fs::path log = fs::temp_directory_path() / ("rudnn-cxx-version." + unique_suffix());
  const int rc = run({compiler_path(), "--version"}, log);
  std::string text = read_file(log);
  std::error_code ec;
  fs::remove(log, ec);
  if (rc != 0)
    return RuntimeError(ErrorKind::CompileFailure, "host compiler", "a working C++ compiler (RUDNN_HOST_CXX)",
                        compiler_path());
  cached = compiler_path() + ": " + text.substr(0, text.find('\n'));
  return cached;
}

Result<std::string, RuntimeError> compile(const std::string& source, const std::string& entry,
                                          const std::string& work_dir) {
  auto tpl = template_dir(work_dir);
  if (!tpl.ok()) return tpl.error();
  std::error_code ec;
  const fs::path src_dir = fs::path(work_dir) / "src";
  fs::create_directories(src_dir, ec);
  const std::string stem = entry + "." + unique_suffix();
  const fs::path src = src_dir / (entry + ".cpp");
  const fs::path src_tmp = src_dir / (stem + ".cpp");
  const fs::path out = src_dir / (stem + ".so");
  const fs::path log = src_dir / (stem + ".log");
  std::ofstream(src_tmp, std::ios::binary) << source;

  std::vector<std::string> argv = {compiler_path()};
  for (auto& o : options()) argv.push_back(o);
  argv.insert(argv.end(), {"-I", tpl.value(), src_tmp.string(), "-o", out.string()});
  const int rc = run(argv, log);
  std::string log_text = read_file(log);
  fs::remove(log, ec);
  // Keep the source under a stable name for whoever reads an error.
  fs::rename(src_tmp, src, ec);
  if (rc != 0) {
    fs::remove(out, ec);
    return RuntimeError(ErrorKind::CompileFailure, "kernel " + entry, "a source the host compiler accepts",
                        fmt::format("exit status {}", rc),
                        fmt::format("generated source: {}\n{}", src.string(), log_text));
  }
  std::string bytes = read_file(out);
  fs::remove(out, ec);
  return bytes;
}

}  // namespace rudnn::compiler::host_cc
