#include "agent/hang/pickle_reader.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

namespace ddprun::agent {
namespace {

using nlohmann::json;

// The opcodes read (the pickle protocol's names).
enum Op : uint8_t {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kBinFloat = 'G',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kReduce = 'R',
  kBinUnicode = 'X',
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kEmptyList = ']',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kAppends = 'e',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kEmptyDict = '}',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kProto = 0x80,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
};

// A pickle may refer to a value it holds again and again (the memo): nested, such
// references could make a few kilobytes read as gigabytes, or as a chain too deep to
// walk. A flight recorder dump holds a few hundred thousand values, nested a few deep.
constexpr int64_t kMaxValues = 4'000'000;  // made in all, copies included
constexpr int kMaxDepth = 100;

// A value as read, with how many values it holds and how deeply they nest.
struct Node {
  json value;
  int64_t size = 1;
  int depth = 0;
};

// A value on the unpickler's stack. Containers are shared so that the memo sees what
// is appended to them after they were memoized.
struct Item {
  enum class Kind { kValue, kMark, kGlobal };
  Kind kind = Kind::kValue;
  std::shared_ptr<Node> value;
  std::string global;  // "module.name" of a kGlobal
};

std::string hex(uint8_t b) {
  const char* digits = "0123456789abcdef";
  return {digits[b >> 4], digits[b & 15]};
}

// An item's size and nesting as the reader's limits count them (a mark: 1 and 0).
int64_t size_of(const Item& it) { return it.value ? it.value->size : 1; }
int depth_of(const Item& it) { return it.value ? it.value->depth : 0; }

class Unpickler {
 public:
  explicit Unpickler(std::string_view bytes) : in_(bytes) {}

  json run() {
    while (true) {
      uint8_t op = byte();
      if (op == kStop) break;
      step(op);
    }
    if (stack_.size() != 1 || stack_.back().kind != Item::Kind::kValue)
      throw PickleError("pickle: the stack does not end with one value");
    return take(pop());
  }

 private:
  // One opcode: each of the three tables below takes its own and says whether it did.
  void step(uint8_t op) {
    if (scalar(op) || stack_or_memo(op) || container_or_object(op)) return;
    throw PickleError("pickle: unsupported opcode 0x" + hex(op) + " at byte " +
                      std::to_string(pos_ - 1));
  }

  // Table: the opcodes that push one value (bytes are read past: reports never need them).
  bool scalar(uint8_t op) {
    switch (op) {
      case kNone:
        push(nullptr);
        return true;
      case kNewTrue:
        push(true);
        return true;
      case kNewFalse:
        push(false);
        return true;
      case kBinInt:
        push(static_cast<int32_t>(little(4)));
        return true;
      case kBinInt1:
        push(little(1));
        return true;
      case kBinInt2:
        push(little(2));
        return true;
      case kLong1:
        push(long_int(byte()));
        return true;
      case kBinFloat:
        push(binary_float());
        return true;
      case kBinUnicode:
        push(text(little(4)));
        return true;
      case kShortBinUnicode:
        push(text(byte()));
        return true;
      case kBinUnicode8:
        push(text(little(8)));
        return true;
      case kBinBytes:
        skip(little(4));
        push(nullptr);
        return true;
      case kShortBinBytes:
        skip(byte());
        push(nullptr);
        return true;
      case kBinBytes8:
        skip(little(8));
        push(nullptr);
        return true;
      default:
        return false;
    }
  }

  // Table: framing, marks, the stack and the memo.
  bool stack_or_memo(uint8_t op) {
    switch (op) {
      case kProto:
        byte();
        return true;
      case kFrame:
        skip(8);
        return true;
      case kMark:
        stack_.push_back({Item::Kind::kMark, nullptr, {}});
        return true;
      case kPop:
        pop();
        return true;
      case kPopMark:
        until_mark();
        return true;
      case kDup:
        stack_.push_back(top());
        return true;
      case kBinPut:
        memo_[little(1)] = top();
        return true;
      case kLongBinPut:
        memo_[little(4)] = top();
        return true;
      case kMemoize:
        memo_[memo_.size()] = top();
        return true;
      case kBinGet:
        stack_.push_back(memo(little(1)));
        return true;
      case kLongBinGet:
        stack_.push_back(memo(little(4)));
        return true;
      default:
        return false;
    }
  }

  // Table: lists, tuples, dicts, and the objects torch pickles (a global called with arguments).
  bool container_or_object(uint8_t op) {
    switch (op) {
      case kEmptyList:
      case kEmptyTuple:
        push(json::array());
        return true;
      case kEmptyDict:
        push(json::object());
        return true;
      case kAppend:
        append(pop());
        return true;
      case kAppends:
        for (const Item& it : until_mark()) append(it);
        return true;
      case kSetItem:
        set_items(2);
        return true;
      case kSetItems:
        set_items(0);
        return true;
      case kTuple:
        tuple(until_mark());
        return true;
      case kTuple1:
      case kTuple2:
      case kTuple3:
        tuple(pop_n(op - kTuple1 + 1));
        return true;
      case kGlobal: {
        std::string module = line();
        global(module + "." + line());
        return true;
      }
      case kStackGlobal:
        stack_global();
        return true;
      case kReduce:
        reduce();
        return true;
      case kBuild:
        pop();
        return true;  // an object's state: the object stays what it was
      default:
        return false;
    }
  }

  void need(uint64_t n) const {
    if (n > in_.size() - pos_) throw PickleError("pickle: truncated");
  }
  uint8_t byte() {
    need(1);
    return static_cast<uint8_t>(in_[pos_++]);
  }
  void skip(uint64_t n) {
    need(n);
    pos_ += n;
  }
  uint64_t little(int n) {
    need(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(in_[pos_++])} << (8 * i);
    return v;
  }
  int64_t long_int(uint8_t n) {
    if (n > 8) throw PickleError("pickle: an integer wider than 64 bits");
    if (n == 0) return 0;
    uint64_t v = little(n);
    if (n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t{0} << (8 * n);  // sign
    return static_cast<int64_t>(v);
  }
  double binary_float() {
    need(8);
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(in_[pos_++]);
    double d = 0;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
  }
  std::string text(uint64_t n) {
    need(n);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::string line() {
    size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) throw PickleError("pickle: truncated");
    std::string s(in_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  void push(json v, int64_t size = 1, int depth = 0) {
    count(1);
    stack_.push_back(
        {Item::Kind::kValue, std::make_shared<Node>(Node{std::move(v), size, depth}), {}});
  }
  void count(int64_t values) {
    made_ += values;
    if (made_ > kMaxValues) throw PickleError("pickle: more than 4 million values");
  }
  Item& top() {
    if (stack_.empty()) throw PickleError("pickle: stack underflow");
    return stack_.back();
  }
  Item pop() {
    if (top().kind == Item::Kind::kMark) throw PickleError("pickle: unexpected mark");
    Item it = std::move(stack_.back());
    stack_.pop_back();
    return it;
  }
  std::vector<Item> pop_n(int n) {
    std::vector<Item> items(static_cast<size_t>(n));
    for (int i = n - 1; i >= 0; --i) items[static_cast<size_t>(i)] = pop();
    return items;
  }
  std::vector<Item> until_mark() {
    size_t mark = stack_.size();
    while (mark > 0 && stack_[mark - 1].kind != Item::Kind::kMark) --mark;
    if (mark == 0) throw PickleError("pickle: no mark");
    std::vector<Item> items(std::make_move_iterator(stack_.begin() + static_cast<long>(mark)),
                            std::make_move_iterator(stack_.end()));
    stack_.resize(mark - 1);
    return items;
  }
  Item memo(uint64_t key) const {
    auto it = memo_.find(key);
    if (it == memo_.end()) throw PickleError("pickle: unknown memo key");
    return it->second;
  }

  // An item's value, moved out when nothing else (the memo) holds it, else copied
  // (which counts: it makes values anew).
  json take(const Item& it) {
    if (it.kind != Item::Kind::kValue) return nullptr;
    if (it.value.use_count() == 1) return std::move(it.value->value);
    count(it.value->size);
    return it.value->value;
  }
  // The container on top of the stack, about to take `added` (its size and depth grow).
  json& container(json::value_t type, const std::vector<const Item*>& added) {
    Item& t = top();
    if (t.kind != Item::Kind::kValue || t.value->value.type() != type)
      throw PickleError("pickle: adding to something that is not a container");
    for (const Item* a : added) {
      t.value->size += size_of(*a);
      t.value->depth = std::max(t.value->depth, depth_of(*a) + 1);
    }
    if (t.value->depth > kMaxDepth) throw PickleError("pickle: nested more than 100 deep");
    return t.value->value;
  }
  void append(const Item& it) {
    json v = take(it);
    container(json::value_t::array, {&it}).push_back(std::move(v));
  }
  // SETITEM (`pairs` 2: one key and value) or SETITEMS (0: every pair since the mark).
  void set_items(int pairs) {
    std::vector<Item> items = pairs ? pop_n(pairs) : until_mark();
    if (items.size() % 2 != 0) throw PickleError("pickle: a key without a value");
    std::vector<const Item*> added;
    for (const Item& it : items) added.push_back(&it);
    json& dict = container(json::value_t::object, added);
    for (size_t i = 0; i < items.size(); i += 2) {
      json key = take(items[i]);
      dict[key.is_string() ? key.get<std::string>() : key.dump()] = take(items[i + 1]);
    }
  }
  void tuple(const std::vector<Item>& items) {
    json t = json::array();
    int64_t size = 1;
    int depth = 0;
    for (const Item& it : items) {
      t.push_back(take(it));
      size += size_of(it);
      depth = std::max(depth, depth_of(it) + 1);
    }
    if (depth > kMaxDepth) throw PickleError("pickle: nested more than 100 deep");
    push(std::move(t), size, depth);
  }
  void global(std::string name) {
    stack_.push_back({Item::Kind::kGlobal, nullptr, std::move(name)});
  }
  void stack_global() {
    std::vector<Item> parts = pop_n(2);
    for (const Item& p : parts)
      if (!p.value || !p.value->value.is_string())
        throw PickleError("pickle: a global without a name");
    global(parts[0].value->value.get<std::string>() + "." +
           parts[1].value->value.get<std::string>());
  }
  void reduce() {
    std::vector<Item> call = pop_n(2);
    json args = take(call[1]);
    // TorchScript's wrappers hand back their first argument: the typed-list builders
    // (build_intlist(list)) and the type tag on every list and dict it writes
    // (restore_type_tag(value, "Dict[str, Any]")).
    bool wrapper =
        call[0].kind == Item::Kind::kGlobal && call[0].global.rfind("torch.jit._pickle.", 0) == 0;
    if (wrapper && args.is_array() && !args.empty()) {
      return push(std::move(args[0]), size_of(call[1]), depth_of(call[1]));
    }
    push(nullptr);
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::vector<Item> stack_;
  std::unordered_map<uint64_t, Item> memo_;
  int64_t made_ = 0;  // values made so far
};

}  // namespace

json read_pickle(std::string_view bytes) {
  try {
    return Unpickler(bytes).run();
  } catch (const json::exception& e) {
    throw PickleError(std::string("pickle: ") + e.what());
  }
}

}  // namespace ddprun::agent
