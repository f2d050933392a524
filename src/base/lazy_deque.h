// lazy_deque.h: a std::deque that costs one pointer until it holds something.
//
// libstdc++'s std::deque allocates its map and a 512-byte node when it is constructed, even
// empty: ~600 bytes for every idle session's ring indexes. This wrapper makes the deque on the
// first push_back and offers just what its users need.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>

namespace uexec::base {

template <class T>
class LazyDeque {
 public:
  using const_iterator = typename std::deque<T>::const_iterator;

  bool empty() const noexcept { return !d_ || d_->empty(); }
  std::size_t size() const noexcept { return d_ ? d_->size() : 0; }
  // front(), back(), pop_front() and [] need a non-empty deque, as std::deque's do.
  T& front() { return d_->front(); }
  const T& front() const { return d_->front(); }
  T& back() { return d_->back(); }
  const T& back() const { return d_->back(); }
  T& operator[](std::size_t i) { return (*d_)[i]; }
  const T& operator[](std::size_t i) const { return (*d_)[i]; }
  void push_back(T v) {
    if (!d_) d_ = std::make_unique<std::deque<T>>();
    d_->push_back(std::move(v));
  }
  void pop_front() { d_->pop_front(); }
  const_iterator begin() const noexcept { return d_ ? d_->cbegin() : none().cbegin(); }
  const_iterator end() const noexcept { return d_ ? d_->cend() : none().cend(); }

 private:
  static const std::deque<T>& none() {
    static const std::deque<T> empty;
    return empty;
  }
  std::unique_ptr<std::deque<T>> d_;
};

}  // namespace uexec::base
