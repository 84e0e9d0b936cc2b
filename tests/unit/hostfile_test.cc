#include "launcher/hostfile.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace ddprun::launcher {
namespace {

std::string names(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const auto& h : hosts) {
    if (!out.empty()) out += ' ';
    out += h.name;
    out += ':';
    out += std::to_string(h.slots);
    if (!h.picked.empty()) {
      out += '[';
      for (size_t i = 0; i < h.picked.size(); ++i) {
        if (i > 0) out += ',';
        out += std::to_string(h.picked[i]);
      }
      out += ']';
    }
  }
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Hostfile, HostsSlotsCommentsAndBlankLines) {
  auto hosts = parse_hostfile(
      "hosts", "# the lab\nnodeA slots=4\n\n  nodeB\tslots=2  # two GPUs\nuser@nodeC\n");
  EXPECT_EQ(names(hosts), "nodeA:4 nodeB:2 user@nodeC:0");
}

TEST(Hostfile, BadLinesNameTheFileAndLine) {
  EXPECT_EQ(error_of([] { parse_hostfile("h", "a\nb slots=x\n"); }),
            "h:2: slots must be a positive integer, not 'x'");
  EXPECT_EQ(error_of([] { parse_hostfile("h", "a slots=0"); }),
            "h:1: slots must be a positive integer, not '0'");
  EXPECT_EQ(error_of([] { parse_hostfile("h", "a gpus=2"); }),
            "h:1: unexpected 'gpus=2' (expected: host [slots=N])");
  EXPECT_EQ(error_of([] { parse_hostfile("h", "a\n\na\n"); }), "h:3: host a is listed twice");
  EXPECT_EQ(error_of([] { parse_hostfile("h", "a;b"); }), "h:1: bad host name 'a;b'");
  EXPECT_EQ(error_of([] { parse_hostfile("h", "# nothing\n\n"); }), "h: no hosts in the hostfile");
}

TEST(Hostfile, HostsFlag) {
  EXPECT_EQ(names(parse_host_list("--hosts", "a,b:4,c")), "a:0 b:4 c:0");
  EXPECT_EQ(error_of([] { parse_host_list("--hosts", "a,,b"); }), "--hosts=a,,b: bad host ''");
  EXPECT_EQ(error_of([] { parse_host_list("--hosts", "a:0"); }),
            "--hosts=a:0: slots must be a positive integer, not '0'");
}

TEST(Hostfile, IncludeAndExcludeAsDeepSpeedHasThem) {
  auto hosts = parse_host_list("--hosts", "w0:4,w1:4,w2:4");
  EXPECT_EQ(names(filter_hosts(hosts, "w0@w2:1,3", "")), "w0:4 w2:4[1,3]");
  EXPECT_EQ(names(filter_hosts(hosts, "", "w1")), "w0:4 w2:4");
  EXPECT_EQ(names(filter_hosts(hosts, "", "w1:0,1@w2")), "w0:4 w1:4[2,3]");
  EXPECT_EQ(names(filter_hosts(hosts, "w0:0,1,2", "w0:1")), "w0:4[0,2]");
  EXPECT_EQ(error_of([&] { filter_hosts(hosts, "w9", ""); }),
            "--include: host w9 is not in the host list");
  EXPECT_EQ(error_of([&] { filter_hosts(hosts, "w0:4", ""); }),
            "--include: host w0 has 4 slots; there is no slot 4");
  EXPECT_EQ(error_of([&] { filter_hosts(hosts, "", "w0@w1@w2"); }),
            "--include/--exclude left no host to run on");
  EXPECT_EQ(error_of([] { filter_hosts(parse_host_list("--hosts", "a"), "a:0", ""); }),
            "--include: host a has no slots=N, so its slots cannot be picked");
  EXPECT_EQ(error_of([&] { filter_hosts(hosts, "w0:x", ""); }),
            "--include=w0:x: bad slot 'x' of host w0");
}

}  // namespace
}  // namespace ddprun::launcher
