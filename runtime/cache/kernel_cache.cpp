#include "cache/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "cache/sha256.h"
#include "log.h"
#include "stats_counters.h"

namespace rudnn::runtime {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'R', 'U', 'D', 'N', 'N', 'K', 'C', '1'};
constexpr std::size_t kHeaderBytes = 8 + 8 + 32;  // magic, payload size, payload sha256

void append_field(std::string& out, std::string_view field) {
  out += fmt::format("{}:", field.size());
  out += field;
}

}  // namespace

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

std::string KernelCacheKey::digest() const {
  std::string all;
  for (std::string_view f : {std::string_view(source), std::string_view(options), std::string_view(compiler_version),
                             std::string_view(arch), std::string_view(library_version)})
    append_field(all, f);
  return sha256_hex(all);
}

KernelCache::KernelCache(std::string directory) : dir_(std::move(directory)) {}

std::string KernelCache::default_directory() {
  if (const char* d = std::getenv("RUDNN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/rudnn";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/rudnn";
  return (fs::temp_directory_path() / "rudnn-cache").string();
}

KernelCache& KernelCache::instance() {
  static KernelCache cache(default_directory());
  return cache;
}

std::string KernelCache::entry_path(const std::string& digest) const {
  return fmt::format("{}/kernels/{}/{}.bin", dir_, digest.substr(0, 2), digest);
}

std::optional<std::string> KernelCache::load(const std::string& digest) const {
  const std::string path = entry_path(digest);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  std::string bytes(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!in) bytes.clear();  // unreadable: treated as a bad entry below
  auto reject = [&](const char* why) -> std::optional<std::string> {
    log_info("kernel cache entry {} is bad ({}); rebuilding it", path, why);
    count(&StatCounters::disk_cache_rebuilds);
    std::error_code ec;
    fs::remove(path, ec);
    return std::nullopt;
  };
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 8) != 0) return reject("no header");
  std::uint64_t size = 0;
  std::memcpy(&size, bytes.data() + 8, 8);
  if (bytes.size() != kHeaderBytes + size) return reject("truncated");
  std::string payload = bytes.substr(kHeaderBytes);
  auto sum = sha256(payload);
  if (std::memcmp(sum.data(), bytes.data() + 16, 32) != 0) return reject("checksum mismatch");
  return payload;
}

Status<RuntimeError> KernelCache::store(const std::string& digest, std::string_view payload) const {
  const std::string path = entry_path(digest);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return RuntimeError(ErrorKind::CacheFailure, "cache directory", "writable", ec.message() + ": " + dir_);

  std::string bytes(kMagic, 8);
  const std::uint64_t size = payload.size();
  bytes.append(reinterpret_cast<const char*>(&size), 8);
  auto sum = sha256(payload);
  bytes.append(reinterpret_cast<const char*>(sum.data()), 32);
  bytes.append(payload);

  // Unique temporary name in the same directory, so rename is atomic.
  std::random_device rd;
  const std::string tmp = fmt::format("{}.tmp.{}.{:x}", path, ::getpid(), (std::uint64_t(rd()) << 32) | rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return RuntimeError(ErrorKind::CacheFailure, "cache entry", "a writable temporary file", std::strerror(errno));
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return RuntimeError(ErrorKind::CacheFailure, "cache entry", "a complete write", std::strerror(err));
    }
    off += static_cast<std::size_t>(w);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return RuntimeError(ErrorKind::CacheFailure, "cache entry", "an atomic rename", std::strerror(err));
  }
  return {};
}

}  // namespace rudnn::runtime
