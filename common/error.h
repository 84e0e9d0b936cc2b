#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ddprun {

/// Root of every error ddprun's modules throw. `what()` is a complete sentence
/// fragment a user can read: it names the thing that failed and, where known, why.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad command-line input. main() prints it as one line and exits 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// A failed system call; the message carries the call's context and strerror(errno).
class SystemError : public Error {
 public:
  SystemError(const std::string& context, int err)
      : Error(context + ": " + std::strerror(err)), errno_(err) {}
  int code() const { return errno_; }

 private:
  int errno_;
};

/// A connection or a store operation failed (connection lost, bad reply, server
/// closed), or an address could not be listened on.
class StoreError : public Error {
 public:
  using Error::Error;
};

/// An address and port could not be listened on (in use, not this host's, ...).
class ListenError : public StoreError {
 public:
  using StoreError::StoreError;
};

/// Something did not happen before its deadline.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

/// Throws SystemError with `context` when a syscall returned -1.
inline long check_syscall(long result, const std::string& context) {
  if (result == -1) throw SystemError(context, errno);
  return result;
}

}  // namespace ddprun
