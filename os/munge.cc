#include "os/munge.h"

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>

#include "common/error.h"
#include "os/shared_library.h"

namespace ddprun::os {
namespace {

// MUNGE's C interface, as munge.h declares it (contexts are opaque pointers, errors
// ints with 0 for success).
constexpr int kOptSocket = 8;          // MUNGE_OPT_SOCKET (const char*)
constexpr int kOptUidRestriction = 9;  // MUNGE_OPT_UID_RESTRICTION (uid_t)

}  // namespace

struct Munge::Api {
  void* lib = nullptr;
  void* (*ctx_create)() = nullptr;
  void (*ctx_destroy)(void*) = nullptr;
  int (*ctx_set)(void*, int, ...) = nullptr;
  const char* (*ctx_strerror)(void*) = nullptr;
  int (*encode)(char**, void*, const void*, int) = nullptr;
  int (*decode)(const char*, void*, void**, int*, uid_t*, gid_t*) = nullptr;
  const char* (*strerror)(int) = nullptr;

  ~Api() {
    if (lib) ::dlclose(lib);
  }
};

std::unique_ptr<Munge> Munge::load(const std::string& socket, std::string* why) {
  void* lib = ::dlopen("libmunge.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    if (why) *why = "MUNGE's library (libmunge.so.2, Debian's libmunge2) is not installed";
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->lib = lib;
  api->ctx_create = library_function<decltype(api->ctx_create)>(lib, "munge_ctx_create");
  api->ctx_destroy = library_function<decltype(api->ctx_destroy)>(lib, "munge_ctx_destroy");
  api->ctx_set = library_function<decltype(api->ctx_set)>(lib, "munge_ctx_set");
  api->ctx_strerror = library_function<decltype(api->ctx_strerror)>(lib, "munge_ctx_strerror");
  api->encode = library_function<decltype(api->encode)>(lib, "munge_encode");
  api->decode = library_function<decltype(api->decode)>(lib, "munge_decode");
  api->strerror = library_function<decltype(api->strerror)>(lib, "munge_strerror");
  if (!api->ctx_create || !api->ctx_destroy || !api->ctx_set || !api->ctx_strerror ||
      !api->encode || !api->decode || !api->strerror) {
    if (why) *why = "libmunge.so.2 lacks MUNGE's functions";
    return nullptr;  // ~Api closes the library
  }
  return std::unique_ptr<Munge>(new Munge(std::move(api), socket));
}

Munge::Munge(std::unique_ptr<Api> api, std::string socket)
    : api_(std::move(api)), socket_(std::move(socket)) {}
Munge::~Munge() = default;

// A context for one call, talking to munged at socket_.
std::unique_ptr<void, void (*)(void*)> Munge::context() const {
  std::unique_ptr<void, void (*)(void*)> ctx(api_->ctx_create(), api_->ctx_destroy);
  if (!ctx) throw Error("MUNGE: cannot create a context");
  if (!socket_.empty()) api_->ctx_set(ctx.get(), kOptSocket, socket_.c_str());
  return ctx;
}

std::string Munge::encode(const std::string& payload, std::optional<uid_t> only_uid) {
  auto ctx = context();
  if (only_uid) api_->ctx_set(ctx.get(), kOptUidRestriction, *only_uid);
  char* cred = nullptr;
  int err = api_->encode(&cred, ctx.get(), payload.data(), static_cast<int>(payload.size()));
  if (err != 0) {
    std::free(cred);
    throw Error(std::string("MUNGE could not make a credential: ") + api_->ctx_strerror(ctx.get()));
  }
  std::string out = cred;
  std::free(cred);
  return out;
}

net::Credentials::Decoded Munge::decode(const std::string& credential) {
  auto ctx = context();
  void* buf = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int err = api_->decode(credential.c_str(), ctx.get(), &buf, &len, &uid, &gid);
  std::string payload = buf && len > 0 ? std::string(static_cast<char*>(buf), len) : "";
  std::free(buf);
  if (err != 0) throw Error(std::string("MUNGE: ") + api_->ctx_strerror(ctx.get()));
  return {payload, uid};
}

std::string munge_socket_of(const std::string& slurm_conf) {
  std::istringstream in(slurm_conf);
  std::string socket;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    std::string_view rest(line);
    rest.remove_prefix(start);
    constexpr std::string_view kKey = "authinfo";
    if (rest.size() <= kKey.size()) continue;
    std::string key(rest.substr(0, kKey.size()));
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (key != kKey) continue;
    rest.remove_prefix(kKey.size());
    size_t eq = rest.find_first_not_of(" \t");
    if (eq == std::string_view::npos || rest[eq] != '=') continue;
    // AuthInfo=opt=value,opt=value: the socket's is the one ddprun needs.
    std::string_view options = rest.substr(eq + 1);
    while (!options.empty()) {
      size_t comma = options.find(',');
      std::string_view option = options.substr(0, comma);
      while (!option.empty() && (option.front() == ' ' || option.front() == '\t'))
        option.remove_prefix(1);
      while (!option.empty() &&
             (option.back() == ' ' || option.back() == '\t' || option.back() == '\r'))
        option.remove_suffix(1);
      if (option.starts_with("socket=")) socket = std::string(option.substr(7));
      if (comma == std::string_view::npos) break;
      options.remove_prefix(comma + 1);
    }
  }
  return socket;
}

}  // namespace ddprun::os
