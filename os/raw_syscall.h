#pragma once

// System calls made without the C library: no errno written, no lock, no thread state
// touched. For code that runs in another process's memory and thread state (a child
// made with CLONE_VM and without CLONE_VFORK, whose parent keeps running): there,
// libc's wrappers would write the parent thread's errno from under it.
//
// Where this architecture has none here, kRawSyscalls is false and raw_syscall()
// calls libc's syscall() (for children that suspend their parent, CLONE_VFORK).

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ddprun::os {

#if defined(__x86_64__) || defined(__aarch64__)
inline constexpr bool kRawSyscalls = true;
#else
inline constexpr bool kRawSyscalls = false;
#endif

/// Calls system call `number`; returns its result, or -errno on failure.
__attribute__((always_inline, no_sanitize("address", "undefined"))) inline long raw_syscall(
    long number, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
#if defined(__x86_64__)
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return result;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = number;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory", "cc");
  return x0;
#else
  long result = ::syscall(number, a, b, c, d, e, f);
  return result == -1 ? -errno : result;
#endif
}

/// A pointer as a system call's argument (inlined, never instrumented).
template <typename T>
__attribute__((always_inline, no_sanitize("address", "undefined"))) inline long raw_arg(T* p) {
  return reinterpret_cast<long>(p);
}

}  // namespace ddprun::os
