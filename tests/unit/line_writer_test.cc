#include "agent/line_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/helpers/scratch.h"

namespace ddprun::agent {
namespace {

// Captures what a LineWriter writes to its console and file descriptors.
class Capture {
 public:
  Capture() { EXPECT_EQ(::pipe2(fds_, O_NONBLOCK), 0); }
  ~Capture() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  int fd() const { return fds_[1]; }
  std::string take() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds_[0], buf, sizeof(buf))) > 0) out.append(buf, n);
    return out;
  }

 private:
  int fds_[2];
};

TEST(LineWriter, HoldsPartialLinesUntilTheyEnd) {
  Capture console;
  LineWriter w(console.fd(), -1, "");
  w.feed("abc", 3);
  EXPECT_EQ(console.take(), "");
  w.feed("def\nghi", 7);
  EXPECT_EQ(console.take(), "abcdef\n");
  w.finish();
  EXPECT_EQ(console.take(), "ghi");
}

TEST(LineWriter, PrefixesEveryLine) {
  Capture console;
  LineWriter w(console.fd(), -1, "[p]:");
  std::string text = "one\ntwo\n\nthree";
  w.feed(text.data(), text.size());
  w.finish();
  EXPECT_EQ(console.take(), "[p]:one\n[p]:two\n[p]:\n[p]:three");
}

TEST(LineWriter, CarriageReturnFlushesAndCrlfIsOneLineEnd) {
  Capture console;
  LineWriter w(console.fd(), -1, "P");
  w.feed("10%\r", 4);
  EXPECT_EQ(console.take(), "P10%\r");
  w.feed("\nnext\r\n", 7);
  EXPECT_EQ(console.take(), "\nPnext\r\n");
}

TEST(LineWriter, FileGetsRawBytesAtOnce) {
  Capture console;
  Capture file;
  LineWriter w(console.fd(), file.fd(), "[x]:");
  w.feed("partial", 7);
  EXPECT_EQ(file.take(), "partial");
  EXPECT_EQ(console.take(), "");
}

TEST(LineWriter, VeryLongLinesAreNotHeldForever) {
  Capture console;
  LineWriter w(console.fd(), -1, "");
  std::string chunk(LineWriter::kMaxPending, 'x');
  w.feed(chunk.data(), chunk.size());
  EXPECT_EQ(console.take().size(), chunk.size());
}

TEST(ExpandPrefix, KnownAndUnknownNames) {
  PrefixVars v{"trainer", 2, 10, 1, "hostA"};
  EXPECT_EQ(expand_prefix("[${role_name}${local_rank}]:", v), "[trainer2]:");
  EXPECT_EQ(expand_prefix("${host}:${node_rank}:${rank} ${other} ${", v), "hostA:1:10 ${other} ${");
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LineFilter, CopiesTheMatchingLinesOfEveryWriterWithTheirPrefix) {
  std::string path = test::scratch_dir("ddprun_filter_") + "/filtered_stdout.log";
  auto filter = std::make_shared<LineFilter>(path, std::vector<std::string>{"loss", "a,b"});
  Capture console;
  // An unprefixed console (not tee'd) still gives the filtered file its worker's prefix.
  LineWriter zero(console.fd(), -1, "", filter, "[default0]:");
  LineWriter one(console.fd(), -1, "[default1]:", filter, "[default1]:");
  std::string text = "step 1 loss 0.5\nnothing\r\nsay a,b\npartial lo";
  zero.feed(text.data(), text.size());
  one.feed("loss 2\n", 7);
  EXPECT_EQ(file_text(path), "[default0]:step 1 loss 0.5\n[default0]:say a,b\n[default1]:loss 2\n");
  zero.feed("ss\n", 3);  // a line is matched once it is whole
  EXPECT_EQ(console.take(),
            text.substr(0, text.rfind('\n') + 1) + "[default1]:loss 2\npartial loss\n");
  EXPECT_EQ(file_text(path).substr(file_text(path).rfind("[default0]")),
            "[default0]:partial loss\n");
}

}  // namespace
}  // namespace ddprun::agent
