#include "agent/hang/pickle_reader.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace ddprun::agent {
namespace {

using nlohmann::json;

// Dumps that Python's pickler wrote (tests/data/make_flight_records.py).
std::string data_file(const std::string& name) {
  std::ifstream in(std::string(DDPRUN_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void expect_the_written_dump(const json& d) {
  EXPECT_EQ(d["version"], "2.3");
  EXPECT_EQ(d["pg_config"]["0"]["desc"], "default_pg");
  ASSERT_EQ(d["entries"].size(), 4u);
  const json& first = d["entries"][0];
  EXPECT_EQ(first["collective_seq_id"], 41);
  EXPECT_EQ(first["time_created_ns"], 1700000000123456789LL);
  EXPECT_EQ(first["duration_ms"], 1.5);
  EXPECT_EQ(first["retired"], true);
  EXPECT_EQ(first["is_p2p"], false);
  EXPECT_TRUE(first["time_discovered_started_ns"].is_null());
  EXPECT_EQ(first["process_group"], json::array({"0", "default_pg"}));
  EXPECT_EQ(first["frames"][0]["line"], 2050);
  // Written once and referred to by every entry (the memo): the whole list each time.
  for (const json& e : d["entries"]) EXPECT_EQ(e["input_sizes"], json::array({{1024}}));
  EXPECT_EQ(d["entries"][1]["state"], "started");
  EXPECT_TRUE(d["entries"][1]["duration_ms"].is_null());
}

TEST(PickleReader, ReadsWhatPythonWritesAtProtocolTwo) {
  std::string bytes = data_file("flight_record_protocol2.pickle");
  ASSERT_FALSE(bytes.empty());
  expect_the_written_dump(read_pickle(bytes));
}

TEST(PickleReader, ReadsWhatPythonWritesAtProtocolFive) {
  std::string bytes = data_file("flight_record_protocol5.pickle");
  ASSERT_FALSE(bytes.empty());
  expect_the_written_dump(read_pickle(bytes));
}

// A literal's bytes, NULs included.
template <size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

// TorchScript's pickler (what PyTorch's C++ dump uses) writes a typed list as a call
// of torch.jit._pickle.build_intlist on a tuple holding the list, and wide integers
// as LONG1.
TEST(PickleReader, ReadsTorchScriptsTypedListsAndWideIntegers) {
  std::string b = bytes("\x80\x02}q\x00(");  // dict, memo 0, mark
  b += bytes(
      "X\x05\x00\x00\x00"
      "sizes");                                            // a key
  b += bytes("ctorch.jit._pickle\nbuild_intlist\nq\x01");  // the builder
  b += bytes(
      "(]q\x02(K\x08M\x00\x04"
      "etR");  // its call on ([8, 1024],)
  b += bytes(
      "X\x04\x00\x00\x00"
      "time");                                             // a key
  b += bytes("\x8a\x08\xff\xff\xff\xff\xff\xff\xff\xff");  // -1 in eight bytes
  b += bytes(
      "X\x03\x00\x00\x00"
      "big");                                  // a key
  b += bytes("\x8a\x05\x00\x00\x00\x00\x01");  // 2^32 in five
  b += bytes("u.");
  json d = read_pickle(b);
  EXPECT_EQ(d["sizes"], json::array({8, 1024}));
  EXPECT_EQ(d["time"], -1);
  EXPECT_EQ(d["big"], 4294967296LL);
}

// And since torch 1.x every list and dict comes tagged with its type:
// restore_type_tag(value, "Dict[str, Any]"), the global memoized once and fetched again.
TEST(PickleReader, ReadsTorchScriptsTypeTags) {
  std::string b = bytes(
      "\x80\x02"
      "ctorch.jit._pickle\nrestore_type_tag\nq\x00");
  b += bytes(
      "}q\x01(X\x07\x00\x00\x00"
      "entries");  // {"entries":
  b += bytes(
      "h\x00]q\x02(K\x01K\x02"
      "e");  // tag([1, 2],
  b += bytes(
      "X\x09\x00\x00\x00"
      "List[int]\x86R");  //  "List[int]")
  b += bytes(
      "uX\x0e\x00\x00\x00"
      "Dict[str, Any]\x86R.");  // } tagged
  json d = read_pickle(b);
  EXPECT_EQ(d, json({{"entries", {1, 2}}})) << d.dump();
}

TEST(PickleReader, NeverCallsAnyOtherGlobal) {
  // os.system("true"): a call the reader only ever sees as data.
  std::string b = bytes(
      "\x80\x02"
      "cos\nsystem\nX\x04\x00\x00\x00"
      "true\x85R.");
  EXPECT_TRUE(read_pickle(b).is_null());
}

// Why read_pickle refused `bytes` ("" when it read them).
std::string refusal(std::string_view bytes) {
  try {
    read_pickle(bytes);
  } catch (const PickleError& e) {
    return e.what();
  }
  return "";
}

// A few hundred bytes that refer to a list of lists of lists... ten times each would
// read as ten billion values; a chain of lists each in the next would be too deep to
// walk. Both are refused before they cost much.
TEST(PickleReader, ReferencesThatMultiplyOrNestWithoutEndAreRefused) {
  std::string laughs = bytes("\x80\x02]q\x00(");
  for (int i = 0; i < 10; ++i) laughs += bytes("K\x01");
  laughs += "e";
  for (int level = 1; level <= 10; ++level) {
    laughs += "]q" + std::string(1, static_cast<char>(level)) + "(";
    for (int i = 0; i < 10; ++i) laughs += "h" + std::string(1, static_cast<char>(level - 1));
    laughs += "e";
  }
  laughs += ".";
  EXPECT_NE(refusal(laughs).find("more than 4 million values"), std::string::npos)
      << refusal(laughs);
  std::string chain = bytes("\x80\x02]q\x00");
  for (int level = 1; level <= 150; ++level) {
    chain += "]h" + std::string(1, static_cast<char>(level - 1)) + "aq" +
             std::string(1, static_cast<char>(level));
  }
  chain += ".";
  EXPECT_NE(refusal(chain).find("nested more than 100 deep"), std::string::npos) << refusal(chain);
}

TEST(PickleReader, EveryPrefixOfADumpIsAnErrorNotACrash) {
  std::string bytes = data_file("flight_record_protocol2.pickle");
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(read_pickle(std::string_view(bytes).substr(0, n)), PickleError) << n;
}

TEST(PickleReader, MalformedPicklesAreErrors) {
  for (std::string bad :
       {bytes("Q."), bytes("\x80\x02."), bytes("a."), bytes("(u."), bytes("N}s."), bytes("h\x07."),
        bytes("K\x01K\x02."), bytes("\x8a\x09."), bytes("not a pickle at all")}) {
    EXPECT_THROW(read_pickle(bad), PickleError) << bad;
  }
}

}  // namespace
}  // namespace ddprun::agent
