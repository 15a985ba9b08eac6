/**
 * The reducer's output as values: hook replies, I/O commands for publishers, and decision records
 * the journal keeps as derived entries. Records only; depends on {@code io.kvledger.core.model}.
 */
package io.kvledger.core.effect;
