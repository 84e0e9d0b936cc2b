#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/loop_store.h"

namespace ddprun::testing {

/// A LoopStore that hands every operation to another one (`inner`): tests derive from
/// it and override the one operation they watch or change. Each operation is
/// forwarded, so a derived store never falls back to a blocking call.
class ForwardingLoopStore : public store::LoopStore {
 public:
  explicit ForwardingLoopStore(store::LoopStore& inner) : inner_(inner) {}
  /// Owns `inner`.
  explicit ForwardingLoopStore(std::unique_ptr<store::LoopStore> inner)
      : owned_(std::move(inner)), inner_(*owned_) {}

  store::Store& store() override { return inner_.store(); }
  bool wait_brings_values() const override { return inner_.wait_brings_values(); }
  Task<std::optional<std::vector<std::string>>> wait_for(std::vector<std::string> keys,
                                                         std::chrono::milliseconds timeout,
                                                         CancelSignal& cancel) override {
    return inner_.wait_for(std::move(keys), timeout, cancel);
  }
  Task<bool> wait_until_there(std::vector<std::string> keys, std::chrono::milliseconds timeout,
                              CancelSignal& cancel) override {
    return inner_.wait_until_there(std::move(keys), timeout, cancel);
  }
  Task<std::vector<std::optional<std::string>>> get_now(std::vector<std::string> keys,
                                                        CancelSignal& cancel) override {
    return inner_.get_now(std::move(keys), cancel);
  }
  Task<void> set(std::string key, std::string value, CancelSignal& cancel) override {
    return inner_.set(std::move(key), std::move(value), cancel);
  }
  Task<void> multi_set(std::vector<std::string> keys, std::vector<std::string> values,
                       CancelSignal& cancel) override {
    return inner_.multi_set(std::move(keys), std::move(values), cancel);
  }
  Task<int64_t> add(std::string key, int64_t delta, CancelSignal& cancel) override {
    return inner_.add(std::move(key), delta, cancel);
  }
  Task<int64_t> count_in(std::string counter, std::string mark, CancelSignal& cancel) override {
    return inner_.count_in(std::move(counter), std::move(mark), cancel);
  }
  Task<std::string> compare_set(std::string key, std::string expected, std::string desired,
                                CancelSignal& cancel) override {
    return inner_.compare_set(std::move(key), std::move(expected), std::move(desired), cancel);
  }

 protected:
  store::LoopStore& inner() { return inner_; }

 private:
  std::unique_ptr<store::LoopStore> owned_;
  store::LoopStore& inner_;
};

}  // namespace ddprun::testing
