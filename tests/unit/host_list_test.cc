#include "common/host_list.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace ddprun {
namespace {

using Hosts = std::vector<std::string>;

Hosts expand(const std::string& list) { return expand_host_list("SLURM_JOB_NODELIST", list); }

TEST(HostList, PlainNamesAndCommas) {
  EXPECT_EQ(expand("n1"), Hosts({"n1"}));
  EXPECT_EQ(expand("a1,b2,c"), Hosts({"a1", "b2", "c"}));
  EXPECT_EQ(expand("gpu-node_7.cluster"), Hosts({"gpu-node_7.cluster"}));
}

TEST(HostList, RangesAndSingleValuesInBrackets) {
  EXPECT_EQ(expand("n[1-3]"), Hosts({"n1", "n2", "n3"}));
  EXPECT_EQ(expand("n[01-04,07]"), Hosts({"n01", "n02", "n03", "n04", "n07"}));
  EXPECT_EQ(expand("a1,b[2-3],c"), Hosts({"a1", "b2", "b3", "c"}));
  EXPECT_EQ(expand("n[5]"), Hosts({"n5"}));
  EXPECT_EQ(expand("n[8-11]"), Hosts({"n8", "n9", "n10", "n11"}));
}

TEST(HostList, ZeroPaddingFollowsTheLowerBound) {
  EXPECT_EQ(expand("n[098-101]"), Hosts({"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand("n[0-1]"), Hosts({"n0", "n1"}));
  EXPECT_EQ(expand("n[00-01]"), Hosts({"n00", "n01"}));
}

TEST(HostList, SeveralGroupsInOneNameExpandAsAProduct) {
  EXPECT_EQ(expand("r[1-2]-n[1-2]"), Hosts({"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
  EXPECT_EQ(expand("x[1,3]y[07],z"), Hosts({"x1y07", "x3y07", "z"}));
  EXPECT_EQ(expand("[1-2]gpu"), Hosts({"1gpu", "2gpu"}));
}

TEST(HostList, MalformedListsNameTheVariableAndTheFault) {
  struct Case {
    const char* list;
    const char* why;
  };
  for (const Case& c :
       {Case{"", "empty"}, Case{"n[1-2", "is not closed"}, Case{"n1,,n2", "empty host name"},
        Case{"n1,", "empty host name"}, Case{"n[3-1]", "goes backwards"},
        Case{"n[a-b]", "bad range"}, Case{"n[]", "bad range"}, Case{"n[1-]", "bad range"},
        Case{"n[[1]]", "inside brackets"}, Case{"n]1", "unexpected ']'"},
        Case{"n 1", "unexpected ' '"}, Case{"n;rm", "unexpected ';'"},
        Case{"n[0-999999999]", "more than 100000"}, Case{"a[0-999]b[0-999]", "more than 100000"}}) {
    try {
      expand(c.list);
      ADD_FAILURE() << c.list << " was accepted";
    } catch (const UsageError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(std::string("SLURM_JOB_NODELIST=") + c.list + ":"), std::string::npos)
          << what;
      EXPECT_NE(what.find(c.why), std::string::npos) << c.list << ": " << what;
    }
  }
}

}  // namespace
}  // namespace ddprun
