#pragma once
// One profile file of a catalog, parsed when it is first asked for (core/profiles.h): a query
// reads the few profiles it names instead of every file of the search path.

#include <atomic>
#include <cstddef>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/result.h"

namespace cpplan {

// The profile named `name` (its file's stem: every profile's name must equal it) in the file
// `path`. Thread-safe: the first get() parses under the entry's mutex, later ones read the result.
// Copies share the entry: a profile parsed through one catalog is parsed for its copies too (the
// session copies the catalog for each query), and stays alive while any of them holds it.
template <class P>
class LazyProfile {
 public:
  LazyProfile(std::string name, std::string path)
      : name_(std::move(name)), state_(std::make_shared<State>(std::move(path))) {}
  explicit LazyProfile(P profile) : name_(profile.name) { set(std::move(profile)); }

  const std::string& name() const { return name_; }
  const std::string& path() const { return state_->path; }

  // The profile, parsed by `parse(path)` (a Result<P>) on the first call; or that call's error.
  template <class Parse>
  Result<const P*> get(Parse&& parse) const {
    State& s = *state_;
    if (!s.ready.load(std::memory_order_acquire)) {
      std::lock_guard lock(s.mutex);
      if (!s.ready.load(std::memory_order_relaxed)) {
        Result<P> parsed = parse(s.path);
        if (parsed) s.value.emplace(std::move(parsed).value());
        else s.error = parsed.error();
        s.ready.store(true, std::memory_order_release);
      }
    }
    if (s.error) return *s.error;
    return &*s.value;
  }
  // The profile if get() parsed it without error, else null.
  const P* parsed() const {
    const State& s = *state_;
    return s.ready.load(std::memory_order_acquire) && s.value ? &*s.value : nullptr;
  }

  // This entry (not its copies) now holds `profile`, parsed. Not thread-safe (the catalog's
  // non-const add_model); an entry no copy shares keeps its object, so a pointer to the previous
  // profile then points to `profile`.
  void set(P profile) {
    if (!state_ || state_.use_count() > 1 || !state_->value) state_ = std::make_shared<State>(std::string());
    state_->value = std::move(profile);
    state_->error.reset();
    state_->ready.store(true, std::memory_order_release);
  }
  // This entry now reads another file (a later directory's profile of the same name), unparsed.
  void reset(std::string path) { state_ = std::make_shared<State>(std::move(path)); }

 private:
  struct State {
    explicit State(std::string file) : path(std::move(file)) {}
    const std::string path;
    std::mutex mutex;
    std::atomic<bool> ready{false};
    std::optional<P> value;
    std::optional<Error> error;
  };
  std::string name_;
  std::shared_ptr<State> state_;
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
