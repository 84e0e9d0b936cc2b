#pragma once

#include <string>
#include <string_view>

#include "dashboard/run_cache.h"
#include "net/http_listener.h"

namespace ddprun::dashboard {

/// What the dashboard answers to one request.
using Response = net::HttpResponse;

/// The dashboard's pages, assets and JSON API over one tracking directory. Pure request
/// to response: no sockets, so every route is tested without a server. Runs are opened
/// read-only for each request, so a job writing its run is never slowed or blocked.
///   GET /                        the runs page
///   GET /run/<id>                a run's page
///   GET /compare?runs=<a>,<b>    runs side by side
///   GET /static/<file>           the pages' scripts and styles (built in)
///   GET /api/runs                every run's summary, newest first
///   GET /api/runs/<id>           one run: summary, config, metric keys, events
///   GET /api/runs/<id>/metrics?key=<k>[&max_points=<n>|&full=1]
///   GET /api/runs/<id>/system    its system metrics
/// Unknown run or key: 404; a malformed query: 400; other methods: 405; every error
/// body is {"error": "..."}.
class Routes {
 public:
  /// Points per series a chart gets unless it asks (about two per pixel of a wide chart).
  static constexpr size_t kDefaultMaxPoints = 4000;

  explicit Routes(std::string tracking_dir);
  Response handle(std::string_view method, std::string_view target) const;

 private:
  Response api(std::string_view path, std::string_view query) const;

  std::string tracking_dir_;
  mutable RunCache cache_;  // what was read of recent runs: a poll reads only what is new
};

}  // namespace ddprun::dashboard
