#pragma once
// The TCPStore client's 0.1 location: it now lives in store/tcpstore/tcp_store_client.h,
// in namespace ddprun::store. Installed so that programs written against 0.1 build as
// they are.
#include "store/tcpstore/tcp_store_client.h"

namespace ddprun::rendezvous {
using store::Store;
using store::TcpStoreClient;
}  // namespace ddprun::rendezvous
