#pragma once
// One profile file of a catalog, parsed when it is first asked for (core/profiles.h): a query
// reads the few profiles it names instead of every file of the search path.

#include <atomic>
#include <cstddef>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/result.h"

namespace cpplan {

// The profile named `name` (its file's stem: every profile's name must equal it) in the file
// `path`. Thread-safe: the first get() parses under the entry's mutex, later ones read the result.
// A copy takes the result if it is there already, else parses again when asked.
template <class P>
class LazyProfile {
 public:
  LazyProfile(std::string name, std::string path) : name_(std::move(name)), path_(std::move(path)) {}
  explicit LazyProfile(P profile) : name_(profile.name) { set(std::move(profile)); }
  LazyProfile(const LazyProfile& other) : name_(other.name_), path_(other.path_) {
    if (other.ready_.load(std::memory_order_acquire)) {
      value_ = other.value_;
      error_ = other.error_;
      ready_.store(true, std::memory_order_relaxed);
    }
  }
  LazyProfile& operator=(const LazyProfile& other) {
    if (this != &other) *this = LazyProfile(other);
    return *this;
  }
  LazyProfile& operator=(LazyProfile&& other) noexcept {
    name_ = std::move(other.name_);
    path_ = std::move(other.path_);
    value_ = std::move(other.value_);
    error_ = std::move(other.error_);
    ready_.store(other.ready_.load(std::memory_order_acquire), std::memory_order_relaxed);
    return *this;
  }
  ~LazyProfile() = default;

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }

  // The profile, parsed by `parse(path)` (a Result<P>) on the first call; or that call's error.
  template <class Parse>
  Result<const P*> get(Parse&& parse) const {
    if (!ready_.load(std::memory_order_acquire)) {
      std::lock_guard lock(mutex_);
      if (!ready_.load(std::memory_order_relaxed)) {
        Result<P> parsed = parse(path_);
        if (parsed) value_.emplace(std::move(parsed).value());
        else error_ = parsed.error();
        ready_.store(true, std::memory_order_release);
      }
    }
    if (error_) return *error_;
    return &*value_;
  }
  // The profile if get() parsed it without error, else null.
  const P* parsed() const { return ready_.load(std::memory_order_acquire) && value_ ? &*value_ : nullptr; }

  // Replaces the profile (not thread-safe: the catalog's non-const add_model); a pointer to the
  // previous one now points to `profile`.
  void set(P profile) {
    if (value_) *value_ = std::move(profile);
    else value_.emplace(std::move(profile));
    error_.reset();
    ready_.store(true, std::memory_order_release);
  }
  // Points the entry at another file (a later directory's profile of the same name), unparsed.
  void reset(std::string path) {
    path_ = std::move(path);
    value_.reset();
    error_.reset();
    ready_.store(false, std::memory_order_relaxed);
  }

 private:
  std::string name_;
  std::string path_;
  mutable std::mutex mutex_;
  mutable std::atomic<bool> ready_{false};
  mutable std::optional<P> value_;
  mutable std::optional<Error> error_;
};

// The parsed profiles of one kind, in catalog order, as a range of `const P&`; a file that failed
// to parse is left out (ProfileCatalog::validate reports it). Valid while the catalog is.
template <class P>
class ProfileList {
 public:
  using Entries = std::deque<LazyProfile<P>>;
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = P;
    using difference_type = std::ptrdiff_t;
    using pointer = const P*;
    using reference = const P&;
    iterator(typename Entries::const_iterator at, typename Entries::const_iterator end) : at_(at), end_(end) { skip(); }
    reference operator*() const { return *at_->parsed(); }
    pointer operator->() const { return at_->parsed(); }
    iterator& operator++() {
      ++at_;
      skip();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const iterator& other) const { return at_ == other.at_; }

   private:
    void skip() {
      while (at_ != end_ && !at_->parsed()) ++at_;
    }
    typename Entries::const_iterator at_, end_;
  };

  explicit ProfileList(const Entries& entries) : entries_(&entries) {}
  iterator begin() const { return {entries_->begin(), entries_->end()}; }
  iterator end() const { return {entries_->end(), entries_->end()}; }
  std::size_t size() const { return static_cast<std::size_t>(std::distance(begin(), end())); }
  bool empty() const { return begin() == end(); }

 private:
  const Entries* entries_;
};

}  // namespace cpplan
