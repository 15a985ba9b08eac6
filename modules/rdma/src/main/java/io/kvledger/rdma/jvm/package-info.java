/**
 * The in-JVM engine: the port over {@code MemorySegment.copy} between engines of one JVM, for
 * tests, the simulator and hosts without UCX. May depend on {@code io.kvledger.rdma},
 * {@code io.kvledger.rdma.spi}, the JDK and reactor-core.
 */
package io.kvledger.rdma.jvm;
