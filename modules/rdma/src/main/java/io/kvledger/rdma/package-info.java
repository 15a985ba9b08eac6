/** kvledger rdma module (being built). */
package io.kvledger.rdma;
