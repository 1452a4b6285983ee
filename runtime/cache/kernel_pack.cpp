#include "cache/kernel_pack.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include <fmt/format.h>
#include "cache/sha256.h"
#include "log.h"

namespace rudnn::runtime {

namespace {

constexpr char kMagic[8] = {'R', 'U', 'D', 'N', 'N', 'P', 'A', 'K'};
constexpr std::size_t kFixedHeaderBytes = 8 + 4 + 4 + 8;  // magic, version, flags, file size
constexpr std::size_t kTrailerBytes = 32;                 // SHA-256 of everything before it
constexpr std::size_t kPayloadAlignment = 16;

using Sha256 = std::array<std::uint8_t, 32>;

std::string hex(const std::uint8_t* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[bytes[i] >> 4];
    s[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return s;
}

// 64 hex characters → 32 bytes; false on anything else.
bool unhex(std::string_view text, Sha256& out) {
  if (text.size() != 64) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < 32; ++i) {
    const int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

RuntimeError pack_error(const std::string& path, std::string expected, std::string actual, std::string detail = {}) {
  return RuntimeError(ErrorKind::CacheFailure, "kernel pack " + path, std::move(expected), std::move(actual),
                      std::move(detail));
}

// --- writing ---------------------------------------------------------------------------------------

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}
void put_str(std::string& out, std::string_view s) {
  put<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

// --- reading: a bounds-checked cursor over the mapped file -----------------------------------------

struct Cursor {
  const char* data;
  std::uint64_t size;  // readable bytes (the trailer excluded)
  std::uint64_t pos = 0;
  bool failed = false;

  bool take(void* dst, std::uint64_t n) {
    if (failed || size - pos < n) {
      failed = true;
      return false;
    }
    std::memcpy(dst, data + pos, n);
    pos += n;
    return true;
  }
  template <class T>
  T get() {
    T v{};
    take(&v, sizeof(T));
    return v;
  }
  std::string get_str() {
    const auto n = get<std::uint32_t>();
    if (failed || size - pos < n) {
      failed = true;
      return {};
    }
    std::string s(data + pos, n);
    pos += n;
    return s;
  }
};

}  // namespace

// --- KernelPackWriter ------------------------------------------------------------------------------

Status<RuntimeError> KernelPackWriter::add_arch(const std::string& arch, const std::string& compiler_version) {
  if (arch.empty()) return RuntimeError(ErrorKind::InvalidValue, "arch", "a non-empty arch name", "\"\"");
  for (const auto& a : archs_) {
    if (a.arch != arch) continue;
    if (a.compiler_version == compiler_version) return {};
    return RuntimeError(ErrorKind::InvalidValue, "compiler version of " + arch, a.compiler_version, compiler_version,
                        "one pack holds one compiler's kernels per arch");
  }
  archs_.push_back({arch, compiler_version});
  return {};
}

Result<bool, RuntimeError> KernelPackWriter::add(KernelPackEntry entry, const KernelBinary& binary) {
  Sha256 digest_bytes;
  if (!unhex(entry.digest, digest_bytes))
    return RuntimeError(ErrorKind::InvalidValue, "digest", "64 hex characters (KernelCacheKey::digest())",
                        fmt::format("\"{}\"", entry.digest));
  bool known_arch = false;
  for (const auto& a : archs_) known_arch |= a.arch == entry.arch;
  if (!known_arch)
    return RuntimeError(ErrorKind::InvalidValue, "arch of kernel " + entry.entry, "an arch added with add_arch",
                        entry.arch);
  // Lower-case hex, so lookups by KernelCacheKey::digest() match whatever case was given.
  entry.digest = hex(digest_bytes.data(), digest_bytes.size());
  if (by_digest_.count(entry.digest)) return false;
  std::string payload = binary.serialize();
  entry.size = payload.size();
  entry.payload_sha256 = sha256(payload);
  by_digest_.emplace(entry.digest, entries_.size());
  entries_.push_back(std::move(entry));
  payloads_.push_back(std::move(payload));
  return true;
}

Status<RuntimeError> KernelPackWriter::write(const std::string& path) const {
  namespace fs = std::filesystem;
  // The index first, with offsets filled once its size is known.
  std::string head(kMagic, 8);
  put<std::uint32_t>(head, kKernelPackFormatVersion);
  put<std::uint32_t>(head, 0);  // flags
  const std::size_t file_size_at = head.size();
  put<std::uint64_t>(head, 0);  // file size, patched below
  put_str(head, library_version_);
  put<std::uint32_t>(head, static_cast<std::uint32_t>(archs_.size()));
  for (const auto& a : archs_) {
    put_str(head, a.arch);
    put_str(head, a.compiler_version);
  }
  put<std::uint64_t>(head, entries_.size());
  std::vector<std::size_t> offset_at(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    Sha256 d;
    unhex(e.digest, d);
    head.append(reinterpret_cast<const char*>(d.data()), d.size());
    offset_at[i] = head.size();
    put<std::uint64_t>(head, 0);  // offset, patched below
    put<std::uint64_t>(head, e.size);
    head.append(reinterpret_cast<const char*>(e.payload_sha256.data()), 32);
    put_str(head, e.arch);
    put_str(head, e.entry);
    put_str(head, e.op_name);
    put_str(head, e.config);
  }
  std::string bytes = std::move(head);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    bytes.resize((bytes.size() + kPayloadAlignment - 1) / kPayloadAlignment * kPayloadAlignment, '\0');
    const std::uint64_t offset = bytes.size();
    std::memcpy(bytes.data() + offset_at[i], &offset, 8);
    bytes += payloads_[i];
  }
  const std::uint64_t total = bytes.size() + kTrailerBytes;
  std::memcpy(bytes.data() + file_size_at, &total, 8);
  const Sha256 sum = sha256(bytes);
  bytes.append(reinterpret_cast<const char*>(sum.data()), sum.size());

  // A unique temporary in the destination directory, so the rename is atomic.
  const fs::path target(path);
  std::random_device rd;
  const std::string tmp = fmt::format("{}.tmp.{}.{:x}", path, ::getpid(), (std::uint64_t(rd()) << 32) | rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return RuntimeError(ErrorKind::IoFailure, "output " + path, "a writable directory", std::strerror(errno),
                        "could not create " + tmp);
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return RuntimeError(ErrorKind::IoFailure, "output " + path, fmt::format("{} bytes written", bytes.size()),
                          fmt::format("{} ({} written)", std::strerror(err), off));
    }
    off += static_cast<std::size_t>(w);
  }
  const bool synced = ::fsync(fd) == 0;
  const int sync_err = errno;
  ::close(fd);
  if (!synced) {
    ::unlink(tmp.c_str());
    return RuntimeError(ErrorKind::IoFailure, "output " + path, "fsync to succeed", std::strerror(sync_err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return RuntimeError(ErrorKind::IoFailure, "output " + path, "an atomic rename over it", std::strerror(err));
  }
  return {};
}

// --- KernelPack --------------------------------------------------------------------------------------

KernelPack::~KernelPack() {
  if (data_) ::munmap(const_cast<char*>(data_), bytes_);
}

Result<std::shared_ptr<const KernelPack>, RuntimeError> KernelPack::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return pack_error(path, "a readable file", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return pack_error(path, "a regular file", "something else");
  }
  std::shared_ptr<KernelPack> pack(new KernelPack());
  pack->path_ = path;
  pack->bytes_ = static_cast<std::uint64_t>(st.st_size);
  if (pack->bytes_ > 0) {
    void* map = ::mmap(nullptr, pack->bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      pack->bytes_ = 0;
      return pack_error(path, "a file that can be mapped", std::strerror(err));
    }
    pack->data_ = static_cast<const char*>(map);
  }
  ::close(fd);  // the mapping keeps the contents

  const char* d = pack->data_;
  const std::uint64_t n = pack->bytes_;
  if (n < 8 || std::memcmp(d, kMagic, 8) != 0)
    return pack_error(path, "a rudnn kernel pack (magic \"RUDNNPAK\")",
                      n < 8 ? fmt::format("a {}-byte file", n) : "another file type (bad magic)");
  if (n < kFixedHeaderBytes + kTrailerBytes)
    return pack_error(path, "a complete header", fmt::format("{} bytes (truncated)", n));
  std::memcpy(&pack->format_version_, d + 8, 4);
  if (pack->format_version_ != kKernelPackFormatVersion)
    return pack_error(path, fmt::format("format version {}", kKernelPackFormatVersion),
                      fmt::format("format version {}", pack->format_version_),
                      "rebuild the pack with this rudnn's rudnn-precompile");
  std::uint64_t recorded = 0;
  std::memcpy(&recorded, d + 16, 8);
  if (recorded != n)
    return pack_error(path, fmt::format("{} bytes (as its header records)", recorded), fmt::format("{} bytes", n),
                      n < recorded ? "truncated" : "trailing bytes");
  // One pass over the whole file: every later read trusts these bytes.
  const Sha256 sum = sha256(std::string_view(d, n - kTrailerBytes));
  if (std::memcmp(sum.data(), d + n - kTrailerBytes, kTrailerBytes) != 0)
    return pack_error(path, "its recorded SHA-256", "a different checksum (the file is corrupt)");

  Cursor c{d, n - kTrailerBytes, kFixedHeaderBytes};
  pack->library_version_ = c.get_str();
  const auto arch_count = c.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < arch_count && !c.failed; ++i) {
    KernelPackArch a;
    a.arch = c.get_str();
    a.compiler_version = c.get_str();
    pack->archs_.push_back(std::move(a));
  }
  const auto count = c.get<std::uint64_t>();
  // Each index record is at least 32 + 8 + 8 + 32 + 4 * 4 bytes: a count beyond that is corrupt.
  if (c.failed || count > (c.size - c.pos) / 96) return pack_error(path, "a well-formed index", "a malformed header");
  pack->entries_.reserve(count);
  pack->by_digest_.reserve(count);
  const std::uint64_t payload_end = n - kTrailerBytes;
  for (std::uint64_t i = 0; i < count; ++i) {
    KernelPackEntry e;
    Sha256 digest{};
    c.take(digest.data(), 32);
    e.digest = hex(digest.data(), digest.size());
    e.offset = c.get<std::uint64_t>();
    e.size = c.get<std::uint64_t>();
    c.take(e.payload_sha256.data(), 32);
    e.arch = c.get_str();
    e.entry = c.get_str();
    e.op_name = c.get_str();
    e.config = c.get_str();
    if (c.failed) return pack_error(path, "a well-formed index", fmt::format("index record {} cut short", i));
    if (e.offset > payload_end || e.size > payload_end - e.offset)
      return pack_error(path, "payloads inside the file", fmt::format("entry {} at {}+{}", e.entry, e.offset, e.size));
    if (!pack->compiler_version(e.arch))
      return pack_error(path, "entries of the recorded archs", fmt::format("entry {} for {}", e.entry, e.arch));
    if (!pack->by_digest_.emplace(e.digest, pack->entries_.size()).second)
      return pack_error(path, "one entry per digest", "a duplicate of " + e.digest);
    pack->entries_.push_back(std::move(e));
  }
  log_info("kernel pack {} loaded: {}", path, pack->describe());
  return std::shared_ptr<const KernelPack>(std::move(pack));
}

const std::string* KernelPack::compiler_version(std::string_view arch) const {
  for (const auto& a : archs_)
    if (a.arch == arch) return &a.compiler_version;
  return nullptr;
}

const KernelPackEntry* KernelPack::find(const std::string& digest) const {
  auto it = by_digest_.find(digest);
  return it == by_digest_.end() ? nullptr : &entries_[it->second];
}

Result<KernelBinary, RuntimeError> KernelPack::binary(const KernelPackEntry& entry) const {
  const std::string_view payload(data_ + entry.offset, entry.size);
  if (sha256(payload) != entry.payload_sha256)
    return pack_error(path_, "kernel " + entry.entry + " to match its SHA-256", "a different checksum");
  KernelBinary b;
  if (!KernelBinary::deserialize(payload, b))
    return pack_error(path_, "kernel " + entry.entry + " as a serialized binary", "malformed bytes");
  return b;
}

std::string KernelPack::describe() const {
  std::string archs;
  for (const auto& a : archs_) archs += (archs.empty() ? "" : ", ") + a.arch + " by " + a.compiler_version;
  return fmt::format("{} ({}; {}; {} kernels)", path_, library_version_, archs.empty() ? "no archs" : archs,
                     entries_.size());
}

// --- KernelPackSet -----------------------------------------------------------------------------------

KernelPackSet KernelPackSet::open(const std::string& path_list) {
  KernelPackSet set;
  std::size_t start = 0;
  while (start <= path_list.size()) {
    std::size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    const std::string path = path_list.substr(start, end - start);
    start = end + 1;
    if (path.empty()) continue;  // "a::b" or a trailing ':'
    auto pack = KernelPack::open(path);
    if (pack.ok())
      set.packs.push_back(pack.value());
    else if (!set.error)
      set.error = pack.error();
  }
  return set;
}

const KernelPackSet& KernelPackSet::from_environment() {
  static const KernelPackSet set = [] {
    const char* v = std::getenv("RUDNN_KERNEL_PACK");
    return v && *v ? open(v) : KernelPackSet{};
  }();
  return set;
}

}  // namespace rudnn::runtime
