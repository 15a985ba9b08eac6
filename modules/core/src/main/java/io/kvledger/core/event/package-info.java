/**
 * The input events of a node (engine hooks, notify frames, transfer completions, time), the
 * journal's source of truth. Records only; depends on {@code io.kvledger.core.model}.
 */
package io.kvledger.core.event;
