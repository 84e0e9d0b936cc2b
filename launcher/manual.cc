#include "launcher/manual.h"

#include <sstream>
#include <string_view>

#include "launcher/cli.h"

namespace ddprun::launcher {
namespace {

constexpr const char* kSummary =
    "launch and supervise distributed PyTorch (or any) training workers, as torchrun does";

std::string env_name(std::string_view name) {
  std::string out = "PET_";
  for (char c : name) out += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return out;
}

// roff: a leading dot or quote would be a request; backslashes and hyphens escaped.
std::string roff(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

std::string markdown_cell(std::string_view text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string man_page() {
  std::ostringstream out;
  out << ".TH DDPRUN 1 \"\" \"ddprun " << DDPRUN_VERSION << "\" \"User Commands\"\n"
      << ".SH NAME\nddprun \\- " << roff(kSummary) << "\n"
      << ".SH SYNOPSIS\n.B ddprun\n[\\fIoptions\\fR] \\fItraining_script\\fR [\\fIscript args\\fR...]\n"
      << ".br\n.B ddprun runs\n\\fIverb\\fR [\\fIrun\\fR] [\\fIflags\\fR]\n"
      << ".br\n.B ddprun completion\n\\fBbash\\fR|\\fBzsh\\fR|\\fBtcsh\\fR\n"
      << ".SH DESCRIPTION\n"
      << roff("Launches nproc_per_node workers with torchrun's environment (RANK, WORLD_SIZE, "
              "LOCAL_RANK, MASTER_ADDR, ...), agrees with the other nodes on ranks, restarts "
              "the workers within a budget, names a hung rank with its stack, and records the "
              "job's shared run. Python scripts run as $PYTHON_EXEC (default python3) -u [-m] "
              "script args; with --no_python the program is executed directly. "
              "${local_rank} in script arguments is substituted.")
      << "\n.SH OPTIONS\n"
      << roff("Every --a_b flag may also be written --a-b, unique prefixes work, a flag given "
              "twice takes its last value, and every option can be set as PET_<NAME>.")
      << "\n";
  for (const auto& d : option_table()) {
    out << ".TP\n\\fB\\-\\-" << roff(d.name) << "\\fR";
    if (d.short_name) out << ", \\fB\\-" << d.short_name << "\\fR";
    if (!d.is_switch) out << " \\fIvalue\\fR";
    out << "\n" << roff(d.help);
    if (!d.is_switch && *d.fallback) out << " (default: " << roff(d.fallback) << ")";
    out << ". Environment: " << env_name(d.name) << ".\n";
  }
  out << ".SH EXIT STATUS\n";
  for (const auto& [code, meaning] : exit_statuses()) {
    out << ".TP\n.B " << roff(code) << "\n" << roff(meaning) << "\n";
  }
  out << ".SH SEE ALSO\n"
      << roff("ddprun runs --help; the documentation in /usr/share/doc/ddprun (docs/ of the "
              "source tree).")
      << "\n";
  return out.str();
}

std::string flag_reference_markdown() {
  std::ostringstream out;
  out << "# Flag reference\n\n"
      << "Generated from ddprun's flag table (`ddprun reference markdown`); the suite fails "
         "when\nthis page differs from what the binary prints. What each flag does beside "
         "torchrun's\nis in [usage](usage.md).\n\n"
      << "Every `--a_b` flag may also be written `--a-b`, unique prefixes work, a flag given "
         "twice\ntakes its last value, and every option can be set as `PET_<NAME>`.\n\n"
      << "| flag | value | default | environment | what it does |\n|---|---|---|---|---|\n";
  for (const auto& d : option_table()) {
    out << "| `--" << d.name << "`";
    if (d.short_name) out << ", `-" << d.short_name << "`";
    out << " | " << (d.is_switch ? "—" : "value") << " | "
        << (d.is_switch || !*d.fallback ? "" : std::string("`").append(markdown_cell(d.fallback)).append("`"))
        << " | `"
        << env_name(d.name) << "` | " << markdown_cell(d.help) << " |\n";
  }
  out << "\n## Exit status\n\n| status | meaning |\n|---|---|\n";
  for (const auto& [code, meaning] : exit_statuses()) {
    out << "| " << code << " | " << markdown_cell(meaning) << " |\n";
  }
  return out.str();
}

}  // namespace ddprun::launcher
