#pragma once

#include <memory>
#include <string>

#include "store/tcpstore/tcp_store_client.h"

// ddprun_store_bench's job-sized tables: a PyTorch-style job start of many workers, and
// many workers polling one key; each worker is a connection of its own.
namespace ddprun::bench {

// Workers' connections come from this many loopback addresses (127.0.0.1, .2, ...):
// each has its own ephemeral ports (about 28,000 here), and with one address the
// kernel's search for a free port grows with the ports in use (and in TIME_WAIT from
// the sizes before), which the server would be blamed for.
constexpr int kSourceAddresses = 16;

// Worker `i`'s connection to the store at 127.0.0.1:`port`, from the loopback
// address 127.0.0.<1 + i % kSourceAddresses>, the port picked by the kernel at connect.
std::unique_ptr<store::TcpStoreClient> worker_client(int port, int i,
                                                     store::tcpstore::Numbering numbering);

// torch 2.14's server looks up the name of each peer: from 127.0.0.2 on, each lookup
// would wait 5 s for a name server this machine cannot reach (torch 1.13's does not
// look). A hosts file of its own names every source address, as a cluster's DNS would
// answer at once (tests/torch2/in_root.sh binds it over the root's /etc/hosts).
// Returns its path, for the caller to remove.
std::string torch2_hosts();

// A PyTorch-style job start against the server at `port`: `n` workers connect, each
// sets its key and ADDs the barrier's counter; the one that brings it to `n` sets the
// barrier's key, for which every worker WAITs. Returns the seconds from the first
// connection to the last worker through the barrier (0 when something failed).
// Connections are made by 8 threads; every WAIT is sent before any answer is read.
double barrier_start(int port, int n,
                     store::tcpstore::Numbering numbering = store::tcpstore::Numbering::kV113);

// Workers polling one key, as torch 2.x's clients wait (WAIT, then CANCEL_WAIT once
// their timeout passes): `n` connections (2.x numbering) wait on one absent key, then
// each in turn withdraws its wait and waits again, 3 times over. Returns the seconds
// per withdrawal, its round trip included (0 when something failed).
double withdrawn_waits(int port, int n);

}  // namespace ddprun::bench
