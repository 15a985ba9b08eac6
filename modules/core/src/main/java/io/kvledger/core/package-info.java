/**
 * kvledger's core: events, effects, states and the pure node lifecycle reducer of the MoRIIO
 * KV-transfer connector. Depends on the JDK only: no clock, no randomness, no threads, no I/O
 * (the tidy test enforces it).
 */
package io.kvledger.core;
