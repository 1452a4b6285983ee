#pragma once
// Engine layouts for the attention template tests (SPEC §13): a [B, H, T, X] operand held
// token-major, [B, T, H, X] in memory, with `gap` spare elements after every row, so that neither
// heads nor tokens are evenly spaced and no row is where a dense tensor would have it. The kernels
// read and write such a buffer through its (batch, head, token) strides.
#include <array>
#include <cstring>
#include <vector>

#include "rudnn/numeric.cuh"

namespace attention_test {

struct TokenMajor {
  rudnn::i64 batch, heads, len, dim, gap;

  rudnn::i64 row() const { return dim + gap; }
  rudnn::i64 elems() const { return batch * len * heads * row(); }
  // (batch, head, token) element strides.
  std::array<rudnn::i64, 3> strides() const { return {len * heads * row(), row(), heads * row()}; }
  rudnn::i64 at(rudnn::i64 b, rudnn::i64 h, rudnn::i64 t) const { return ((b * len + t) * heads + h) * row(); }

  // The dense [B, H, T, X] `dense` laid out token-major; the spares are NaN bytes.
  template <class T>
  std::vector<T> scatter(const std::vector<T>& dense) const {
    std::vector<T> buf(static_cast<std::size_t>(elems()));
    std::memset(buf.data(), 0xFF, buf.size() * sizeof(T));
    each_row([&](rudnn::i64 dense_row, rudnn::i64 at) {
      std::memcpy(&buf[static_cast<std::size_t>(at)], &dense[static_cast<std::size_t>(dense_row * dim)],
                  static_cast<std::size_t>(dim) * sizeof(T));
    });
    return buf;
  }
  // The token-major `buf` as a dense [B, H, T, X] vector, followed by `guard` NaN-byte elements.
  template <class T>
  std::vector<T> gather(const std::vector<T>& buf, std::size_t guard) const {
    std::vector<T> dense(static_cast<std::size_t>(batch * heads * len * dim) + guard);
    std::memset(dense.data(), 0xFF, dense.size() * sizeof(T));
    each_row([&](rudnn::i64 dense_row, rudnn::i64 at) {
      std::memcpy(&dense[static_cast<std::size_t>(dense_row * dim)], &buf[static_cast<std::size_t>(at)],
                  static_cast<std::size_t>(dim) * sizeof(T));
    });
    return dense;
  }
  // Whether every spare element of `buf` (between the rows, and past the last one when `buf` is
  // longer than elems()) still holds NaN bytes: a kernel wrote only its rows.
  template <class T>
  bool spares_untouched(const std::vector<T>& buf) const {
    std::vector<char> used(buf.size(), 0);
    each_row([&](rudnn::i64, rudnn::i64 at) { std::memset(&used[static_cast<std::size_t>(at)], 1, dim); });
    for (std::size_t i = 0; i < buf.size(); ++i) {
      if (used[i]) continue;
      unsigned char bytes[sizeof(T)];
      std::memcpy(bytes, &buf[i], sizeof(T));
      for (unsigned char b : bytes)
        if (b != 0xFF) return false;
    }
    return true;
  }

 private:
  template <class F>
  void each_row(F f) const {
    for (rudnn::i64 b = 0; b < batch; ++b)
      for (rudnn::i64 h = 0; h < heads; ++h)
        for (rudnn::i64 t = 0; t < len; ++t) f((b * heads + h) * len + t, at(b, h, t));
  }
};

}  // namespace attention_test
