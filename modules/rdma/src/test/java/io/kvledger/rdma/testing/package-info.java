/** Test support: the byte pattern of KV blocks, bounded waits, the peer process. */
package io.kvledger.rdma.testing;
