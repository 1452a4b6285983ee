#pragma once
// Vec<T, N>: N consecutive elements moved as whole memory accesses (16, 8, 4 or 2 bytes each), the
// way bandwidth-bound kernels reach full DRAM speed. The elements live as raw 32-bit words (two
// 16-bit elements per word), so a 16-byte load is one ld.global.v4.u32 and converting an element
// to float is a shift or a single cvt; no type punning of element structs is needed.
#include "rudnn/numeric.cuh"

// Host compilers may assume a u32 load never reads memory written as float or 16-bit structs
// (strict aliasing); marking the access types may_alias keeps the emulator build honest.
#if defined(__CUDA_ARCH__)
#define RUDNN_VECTOR_MAY_ALIAS_STRUCT
#define RUDNN_VECTOR_MAY_ALIAS
#else
#define RUDNN_VECTOR_MAY_ALIAS_STRUCT [[gnu::may_alias]]
#define RUDNN_VECTOR_MAY_ALIAS __attribute__((__may_alias__))
#endif

namespace rudnn {

namespace vector_detail {
struct alignas(16) RUDNN_VECTOR_MAY_ALIAS_STRUCT Words4 {
  u32 w[4];
};
struct alignas(8) RUDNN_VECTOR_MAY_ALIAS_STRUCT Words2 {
  u32 w[2];
};
typedef u32 RUDNN_VECTOR_MAY_ALIAS Word1;
typedef u16 RUDNN_VECTOR_MAY_ALIAS Half1;

template <bool kWide>
struct WordOf {
  using type = u32;
};
template <>
struct WordOf<false> {
  using type = u16;
};
}  // namespace vector_detail

template <class T, int N>
struct Vec {
  static_assert(N >= 1 && (N & (N - 1)) == 0, "Vec: N must be a power of two");
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Vec: 16- or 32-bit elements");
  static constexpr int kSize = N;
  static constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  static_assert(kBytes <= 64, "Vec: at most 64 bytes (four 16-byte accesses)");
  // A lone 16-bit element is one 16-bit word; everything else is 32-bit words.
  using Word = typename vector_detail::WordOf<(kBytes >= 4)>::type;
  static constexpr int kWords = kBytes / static_cast<int>(sizeof(Word));
  static constexpr int kPerWord = static_cast<int>(sizeof(Word) / sizeof(T));  // 1 or 2

  Word words[kWords];

  RUDNN_DEVICE T get(int i) const {
    using Bits = typename StorageBits<T>::type;
    if constexpr (kPerWord == 1) {
      return StorageBits<T>::make(static_cast<Bits>(words[i]));
    } else {
      return StorageBits<T>::make(static_cast<Bits>(words[i >> 1] >> ((i & 1) * 16)));
    }
  }
  RUDNN_DEVICE float get_float(int i) const { return to_float(get(i)); }

  // N zero elements (all-zero bits: +0 in every element type).
  RUDNN_DEVICE static Vec zeros() {
    Vec v;
    RUDNN_UNROLL
    for (int i = 0; i < kWords; ++i) v.words[i] = 0;
    return v;
  }

  // Converts N floats (round to nearest even); 16-bit pairs go through one packed conversion.
  RUDNN_DEVICE void set_floats(const float (&f)[N]) {
    if constexpr (kPerWord == 1) {
      RUDNN_UNROLL
      for (int i = 0; i < N; ++i) words[i] = static_cast<Word>(StorageBits<T>::of(from_float<T>(f[i])));
    } else {
      RUDNN_UNROLL
      for (int i = 0; i < kWords; ++i) words[i] = pack2_from_float<T>(f[2 * i], f[2 * i + 1]);
    }
  }
};

// Loads N elements from p, which must be aligned to min(16, sizeof(T) * N) bytes.
template <class T, int N>
RUDNN_DEVICE Vec<T, N> load_vec(const T* p) {
  using V = Vec<T, N>;
  V v;
  if constexpr (V::kBytes >= 16) {
    RUDNN_UNROLL
    for (int c = 0; c < V::kBytes / 16; ++c) {
      const vector_detail::Words4 q = reinterpret_cast<const vector_detail::Words4*>(p)[c];
      RUDNN_UNROLL
      for (int k = 0; k < 4; ++k) v.words[4 * c + k] = q.w[k];
    }
  } else if constexpr (V::kBytes == 8) {
    const vector_detail::Words2 q = *reinterpret_cast<const vector_detail::Words2*>(p);
    v.words[0] = q.w[0];
    v.words[1] = q.w[1];
  } else if constexpr (V::kBytes == 4) {
    v.words[0] = *reinterpret_cast<const vector_detail::Word1*>(p);
  } else {
    v.words[0] = *reinterpret_cast<const vector_detail::Half1*>(p);
  }
  return v;
}

// Stores the N elements of v to p (same alignment rule as load_vec).
template <class T, int N>
RUDNN_DEVICE void store_vec(T* p, const Vec<T, N>& v) {
  using V = Vec<T, N>;
  if constexpr (V::kBytes >= 16) {
    RUDNN_UNROLL
    for (int c = 0; c < V::kBytes / 16; ++c) {
      vector_detail::Words4 q;
      RUDNN_UNROLL
      for (int k = 0; k < 4; ++k) q.w[k] = v.words[4 * c + k];
      reinterpret_cast<vector_detail::Words4*>(p)[c] = q;
    }
  } else if constexpr (V::kBytes == 8) {
    vector_detail::Words2 q;
    q.w[0] = v.words[0];
    q.w[1] = v.words[1];
    *reinterpret_cast<vector_detail::Words2*>(p) = q;
  } else if constexpr (V::kBytes == 4) {
    *reinterpret_cast<vector_detail::Word1*>(p) = v.words[0];
  } else {
    *reinterpret_cast<vector_detail::Half1*>(p) = v.words[0];
  }
}

// FP32 staging in shared memory (the plain-core tile kernels): 16- and 8-byte float vectors, and
// N consecutive floats loaded into registers as the widest aligned vectors N allows.
struct alignas(16) RUDNN_VECTOR_MAY_ALIAS_STRUCT Floats4 {
  float v[4];
};
struct alignas(8) RUDNN_VECTOR_MAY_ALIAS_STRUCT Floats2 {
  float v[2];
};

RUDNN_DEVICE Floats4 load_floats4(const float* p) { return *reinterpret_cast<const Floats4*>(p); }

template <int N>
RUDNN_DEVICE void load_floats(float (&dst)[N], const float* src) {
  if constexpr (N % 4 == 0) {
    RUDNN_UNROLL
    for (int c = 0; c < N / 4; ++c) {
      const Floats4 q = reinterpret_cast<const Floats4*>(src)[c];
      RUDNN_UNROLL
      for (int i = 0; i < 4; ++i) dst[4 * c + i] = q.v[i];
    }
  } else if constexpr (N % 2 == 0) {
    RUDNN_UNROLL
    for (int c = 0; c < N / 2; ++c) {
      const Floats2 q = reinterpret_cast<const Floats2*>(src)[c];
      dst[2 * c] = q.v[0];
      dst[2 * c + 1] = q.v[1];
    }
  } else {
    RUDNN_UNROLL
    for (int i = 0; i < N; ++i) dst[i] = src[i];
  }
}

}  // namespace rudnn
