#include "store/tcpstore/tcp_store_decoder.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ddprun::store::tcpstore {
namespace {

std::string str(const std::string& s) {
  uint64_t n = s.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + s;
}

TEST(RequestDecoder, TellsNumberingsApart) {
  RequestDecoder v2;
  uint32_t magic = kValidationMagic;
  std::string validate = std::string(1, '\0') + std::string(reinterpret_cast<char*>(&magic), 4);
  Request r;
  v2.feed(validate.data(), 3);
  EXPECT_EQ(v2.next(r), RequestDecoder::Status::kNeedMore) << "undecided until the magic is in";
  v2.feed(validate.data() + 3, 2);
  EXPECT_EQ(v2.next(r), RequestDecoder::Status::kReady);
  EXPECT_EQ(v2.numbering(), Numbering::kV2);
  EXPECT_EQ(r.op, Op::kValidate);

  // 0x00 without the magic after it is a 1.13 SET.
  RequestDecoder v113;
  std::string set = std::string(1, '\0') + str("k") + str("v");
  v113.feed(set.data(), set.size());
  ASSERT_EQ(v113.next(r), RequestDecoder::Status::kReady);
  EXPECT_EQ(v113.numbering(), Numbering::kV113);
  EXPECT_EQ(r.op, Op::kSet);
  EXPECT_EQ(r.keys[0], "k");
  EXPECT_EQ(r.values[0], "v");
}

TEST(RequestDecoder, ReassemblesAnySplit) {
  std::string stream = std::string(1, '\x03') + str("counter") + std::string(8, '\x01') +
                       std::string(1, '\x05') + std::string("\x02\0\0\0\0\0\0\0", 8) + str("a") +
                       str("bb");
  for (size_t split = 1; split < stream.size(); ++split) {
    RequestDecoder d;
    Request r;
    d.feed(stream.data(), split);
    std::vector<Op> ops;
    while (d.next(r) == RequestDecoder::Status::kReady) ops.push_back(r.op);
    d.feed(stream.data() + split, stream.size() - split);
    while (d.next(r) == RequestDecoder::Status::kReady) ops.push_back(r.op);
    ASSERT_EQ(ops, (std::vector<Op>{Op::kAdd, Op::kWait})) << "split at " << split;
    EXPECT_EQ(r.keys, (std::vector<std::string>{"a", "bb"}));
    EXPECT_EQ(d.pending(), 0u);
  }
}

// A large request (a round's whole state, 100 kB) leaves no large buffer behind once
// decoded; a request still coming in keeps its bytes.
TEST(RequestDecoder, GivesBackWhatALargeRequestTookOnceDecoded) {
  RequestDecoder d;
  Request r;
  std::string big = std::string(1, '\0') + str("state") + str(std::string(100'000, 'x'));
  d.feed(big.data(), big.size());
  ASSERT_EQ(d.next(r), RequestDecoder::Status::kReady);
  EXPECT_EQ(r.values[0].size(), 100'000u);
  EXPECT_GE(d.capacity(), 100'000u);
  d.release_decoded();
  EXPECT_LE(d.capacity(), kKeptBufferBytes);

  d.feed(big.data(), 50'000);
  EXPECT_EQ(d.next(r), RequestDecoder::Status::kNeedMore);
  d.release_decoded();
  EXPECT_EQ(d.pending(), 50'000u) << "half a request stays";
  d.feed(big.data() + 50'000, big.size() - 50'000);
  ASSERT_EQ(d.next(r), RequestDecoder::Status::kReady);
  EXPECT_EQ(r.values[0], std::string(100'000, 'x'));
}

TEST(RequestDecoder, LimitsAreCheckedFromTheLengthAlone) {
  RequestDecoder d;
  uint64_t huge = kMaxValueSize + 1;
  // 1.13 COMPARE_SET whose expected value claims more than the limit.
  std::string set =
      std::string(1, '\x01') + str("k") + std::string(reinterpret_cast<char*>(&huge), 8);
  d.feed(set.data(), set.size());
  Request r;
  EXPECT_EQ(d.next(r), RequestDecoder::Status::kBad);
  EXPECT_EQ(d.error(), "value too large");
  EXPECT_EQ(d.next(r), RequestDecoder::Status::kBad) << "stays failed";
}

}  // namespace
}  // namespace ddprun::store::tcpstore
