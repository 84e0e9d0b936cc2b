# Built as distributions build network daemons: ddprun parses bytes from sockets (its
# stores, the tracking receiver, the dashboard), so an overflow there should stop it,
# not run code. Each flag only where the compiler or linker has it (-fcf-protection is
# x86's). The suite checks the result (tests/build/hardened_binary.sh).
include(CheckCXXCompilerFlag)
include(CheckLinkerFlag)
foreach(flag -fstack-protector-strong -fstack-clash-protection -fcf-protection)
  string(MAKE_C_IDENTIFIER "DDPRUN_CXX_HAS${flag}" has_flag)
  check_cxx_compiler_flag(${flag} ${has_flag})
  if(${has_flag})
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${flag}>)
  endif()
endforeach()
unset(has_flag)
# glibc's checked string and I/O calls need optimization; under the sanitizers, which
# check the same and more, they are left out. Redefined, not added: some compilers
# define it already.
if(NOT DDPRUN_SANITIZE)
  set(fortify $<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CONFIG:Debug>>>)
  add_compile_options($<${fortify}:-U_FORTIFY_SOURCE> $<${fortify}:-D_FORTIFY_SOURCE=2>)
  unset(fortify)
endif()
# Full RELRO: every relocation applied at start, then read-only (no writable GOT).
check_linker_flag(CXX "-Wl,-z,relro,-z,now" DDPRUN_LINKER_BINDS_NOW)
if(DDPRUN_LINKER_BINDS_NOW)
  add_link_options(-Wl,-z,relro,-z,now)
endif()
