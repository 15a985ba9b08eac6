/**
 * The input events of a node (engine hooks, notify frames, transfer completions, time), the
 * journal's source of truth, and {@link io.kvledger.core.event.NodeEventSink}, the one shape in
 * which adapters hand events to a node's loop. Records and that interface only; depends on
 * {@code io.kvledger.core.model}.
 */
package io.kvledger.core.event;
