/**
 * Engine selection: {@link io.kvledger.rdma.engine.TransferEngines} opens UCX when it loads and
 * the in-JVM engine otherwise (or as {@code -Dkvledger.rdma.engine} says), logging one line on
 * which runs and why. May depend on every other package of this module.
 */
package io.kvledger.rdma.engine;
