#pragma once
// Kernel packs (SPEC §11, issue 3): one versioned, checksummed file of compiled kernels that an
// application ships so that serving never compiles. Entries are keyed exactly like the disk kernel
// cache (KernelCacheKey::digest()); the pack records, per arch, the compiler version its kernels
// were built with, so a deployment without NVRTC can still compute the digests it looks up.
//
// File layout (little-endian; "str" = u32 length + bytes):
//   magic "RUDNNPAK" | u32 format version | u32 flags (0) | u64 file size
//   str library version | u32 arch count | per arch: str arch, str compiler version
//   u64 entry count | per entry: 32-byte digest, u64 offset, u64 size, 32-byte payload SHA-256,
//                                str arch, str entry, str op name, str config
//   payloads (KernelBinary::serialize(), 16-byte aligned) | 32-byte SHA-256 of everything before it
// Opening reads the file once (mmap), checks magic, version, size and the whole-file SHA-256 once,
// and indexes the entries in a hash map; a payload's own SHA-256 is checked when it is first used.
// Any bad pack is a CacheFailure naming the file, never a crash.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "device_backend.h"
#include "rudnn/error.h"

namespace rudnn::runtime {

inline constexpr std::uint32_t kKernelPackFormatVersion = 1;

// The compiler that built one arch's kernels: part of every digest of that arch.
struct KernelPackArch {
  std::string arch;              // "sm_90a", "host-x86_64"
  std::string compiler_version;  // as in KernelCacheKey::compiler_version ("nvrtc 13.0", ...)
};

// What the index says about one kernel (the payload stays in the file until it is used).
struct KernelPackEntry {
  std::string digest;  // KernelCacheKey::digest(), 64 hex characters
  std::string arch;
  std::string entry;    // the extern "C" symbol
  std::string op_name;  // "rudnn.rms_norm"
  std::string config;   // KernelConfig::to_string()
  std::uint64_t offset = 0, size = 0;
  std::array<std::uint8_t, 32> payload_sha256{};
};

// Collects kernels and writes a pack atomically (temporary file in the same directory, fsync,
// rename): a reader sees the old file or the complete new one, never a partial pack.
class KernelPackWriter {
 public:
  explicit KernelPackWriter(std::string library_version) : library_version_(std::move(library_version)) {}

  // Records the compiler of `arch`'s kernels. A second call for one arch must agree.
  Status<RuntimeError> add_arch(const std::string& arch, const std::string& compiler_version);

  // Adds one kernel; its arch must have been added. Returns false (and keeps the first) when an
  // entry with the same digest is already in: identical keys are one kernel.
  Result<bool, RuntimeError> add(KernelPackEntry entry, const KernelBinary& binary);

  std::size_t size() const { return entries_.size(); }
  Status<RuntimeError> write(const std::string& path) const;

 private:
  std::string library_version_;
  std::vector<KernelPackArch> archs_;
  std::vector<KernelPackEntry> entries_;
  std::vector<std::string> payloads_;
  std::unordered_map<std::string, std::size_t> by_digest_;
};

// An opened pack: the file stays mapped read-only for the pack's lifetime.
class KernelPack {
 public:
  static Result<std::shared_ptr<const KernelPack>, RuntimeError> open(const std::string& path);
  ~KernelPack();
  KernelPack(const KernelPack&) = delete;
  KernelPack& operator=(const KernelPack&) = delete;

  const std::string& path() const { return path_; }
  std::uint32_t format_version() const { return format_version_; }
  const std::string& library_version() const { return library_version_; }
  const std::vector<KernelPackArch>& archs() const { return archs_; }
  // The compiler version recorded for `arch`, or nothing when the pack has no kernels for it.
  const std::string* compiler_version(std::string_view arch) const;
  const std::vector<KernelPackEntry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  std::uint64_t file_bytes() const { return bytes_; }

  // The entry with this digest, or nullptr.
  const KernelPackEntry* find(const std::string& digest) const;
  // The entry's binary, its payload SHA-256 checked (CacheFailure when it does not match).
  Result<KernelBinary, RuntimeError> binary(const KernelPackEntry& entry) const;

  // "pack.bin (rudnn 0.1.0 ...; sm_80, sm_90a; 120 kernels)" for messages.
  std::string describe() const;

 private:
  KernelPack() = default;
  std::string path_;
  const char* data_ = nullptr;
  std::uint64_t bytes_ = 0;
  std::uint32_t format_version_ = 0;
  std::string library_version_;
  std::vector<KernelPackArch> archs_;
  std::vector<KernelPackEntry> entries_;
  std::unordered_map<std::string, std::size_t> by_digest_;
};

// The packs named by a list "path[:path...]", opened in order (earlier packs win a lookup).
struct KernelPackSet {
  std::vector<std::shared_ptr<const KernelPack>> packs;
  std::optional<RuntimeError> error;  // the first pack that could not be opened (the rest are still open)

  static KernelPackSet open(const std::string& path_list);
  // RUDNN_KERNEL_PACK, opened once on first use (thread-safe); empty when the variable is unset.
  static const KernelPackSet& from_environment();
};

}  // namespace rudnn::runtime
