#include "agent/spares/spare_watch.h"

namespace ddprun::agent {

SpareWatch::SpareWatch(std::vector<std::string> spares, int attempt,
                       rendezvous::RoundCoordinator& round, Clock& clock)
    : spares_(std::move(spares)), attempt_(attempt), round_(round), every_(clock.make_timer()) {}

void SpareWatch::watch(tracking::RunObserver& observer) {
  every_->start(kEvery, [this, &observer] { look(observer); });
}

void SpareWatch::look(tracking::RunObserver& observer) {
  round_.spares([this, &observer](const std::optional<std::vector<std::string>>& now) {
    if (now && *now != spares_) {
      spares_ = *now;
      observer.spares_waiting(attempt_, *now);
    }
  });
  watch(observer);
}

}  // namespace ddprun::agent
