#include "dashboard/report_page.h"

#include <string_view>

#include "dashboard/assets.h"
#include "dashboard/routes.h"
#include "dashboard/run_data.h"

namespace ddprun::dashboard {
namespace {

// A script or style built into ddprun, inlined: only "</script" or "</style" could
// end its element early, and neither is valid outside a string there.
std::string inline_code(std::string_view text) {
  std::string out(text);
  for (const char* end : {"</script", "</style", "</SCRIPT", "</STYLE"}) {
    for (size_t pos = 0; (pos = out.find(end, pos)) != std::string::npos; pos += 3) {
      out.replace(pos, 2, "<\\/");
    }
  }
  return out;
}

// JSON inlined in a script: every '<' (only ever inside a string there) as \u003c, so
// no text a run holds can end the element or open a comment.
std::string inline_json(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string report_page(tracking::RunStore& store, const std::string& run_id) {
  auto data = report_json(store, run_id, Routes::kDefaultMaxPoints);
  std::string page = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>ddprun run ";
  page += escape_html(run_id);
  page += "</title>\n<style>";
  page += inline_code(asset("dygraph.min.css"));
  page += "\n";
  page += inline_code(asset("app.css"));
  page += "</style></head>\n<body><div id=\"app\"></div>\n<script>";
  page += inline_code(asset("dygraph.min.js"));
  page += "</script>\n<script>window.DDPRUN_REPORT = ";
  page += inline_json(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  page += ";</script>\n<script>";
  page += inline_code(asset("app.js"));
  page += "</script>\n</body></html>\n";
  return page;
}

}  // namespace ddprun::dashboard
