#include "agent/spares/spare_watch.h"

namespace ddprun::agent {

SpareWatch::SpareWatch(std::vector<std::string> spares, int attempt,
                       rendezvous::RoundCoordinator& round, Clock& clock)
    : spares_(std::move(spares)), attempt_(attempt), round_(round), every_(clock.make_timer()) {}

void SpareWatch::watch(OnChange on_change) {
  on_change_ = std::move(on_change);
  every_->start(kEvery, [this] { look(); });
}

void SpareWatch::look() {
  round_.spares([this](const std::optional<std::vector<std::string>>& now) {
    if (now && *now != spares_) {
      spares_ = *now;
      on_change_(spares_, attempt_);
    }
  });
  every_->start(kEvery, [this] { look(); });
}

}  // namespace ddprun::agent
