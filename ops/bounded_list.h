#pragma once
// A list of at most N elements held in place: the slots and named tensors a warm call assembles, so
// that a serving call into caller buffers makes no host allocation (SPEC §13). Going past N is a
// programming error (a fixed op arity), not an input error: it aborts.
#include <array>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <span>

namespace rudnn::ops {

template <class T, std::size_t N>
class BoundedList {
 public:
  BoundedList() = default;
  BoundedList(std::initializer_list<T> items) {
    for (const T& x : items) push_back(x);
  }

  void push_back(const T& x) {
    if (size_ == N) std::abort();
    items_[size_++] = x;
  }
  void clear() { size_ = 0; }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Element access within size() (past it: abort, as push_back past N).
  const T& operator[](std::size_t i) const { return items_[checked(i)]; }
  T& operator[](std::size_t i) { return items_[checked(i)]; }
  const T& front() const { return items_[checked(0)]; }
  const T& back() const { return items_[checked(size_ - 1)]; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + size_; }
  // Views of a list that outlives them (none of a temporary: it would dangle).
  std::span<const T> span() const& { return {items_.data(), size_}; }
  std::span<const T> span() const&& = delete;
  operator std::span<const T>() const& { return span(); }
  operator std::span<const T>() const&& = delete;

 private:
  std::size_t checked(std::size_t i) const {
    if (i >= size_) std::abort();
    return i;
  }
  std::array<T, N> items_{};
  std::size_t size_ = 0;
};

}  // namespace rudnn::ops
