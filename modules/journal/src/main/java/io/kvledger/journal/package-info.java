/**
 * The node journal: one Chronicle Queue per node holding a header (format version, node identity
 * and configuration), every input event the node's reducer applied, and, tagged as derived, every
 * effect the reducer produced; or, under a header whose {@code kv_role} is {@code proxy}, the
 * records of {@code kvledger proxy} ({@code io.kvledger.journal.proxy}).
 * {@link io.kvledger.journal.JournalWriter} appends (one writer thread,
 * one writer process per journal; {@code pretouch()} starts a thread that touches the queue file's
 * pages ahead of a fast writer), {@link io.kvledger.journal.JournalReader} reads it back as
 * {@link io.kvledger.journal.JournalEntry} values, {@link io.kvledger.journal.JournalTailer} follows a
 * live journal, and {@link io.kvledger.journal.JsonLines} converts to and from JSON lines.
 * {@link io.kvledger.journal.RawEntryTailer} and {@link io.kvledger.journal.RawJournalWriter} move
 * entries as bytes, never re-encoded (shipping journals to Kafka and reading them back). The byte
 * layout is described in {@code journal/FORMAT.md}. Each entry carries a CRC32C (format version 2);
 * readers scan the queue files with plain file reads ({@code QueueScanner}, never a memory mapping
 * a damaged file could fault; a large file is read ahead on a thread of its own, {@code ReadAhead}),
 * check every entry, read around damage and report each damaged region as a
 * {@link io.kvledger.journal.JournalDamage}. Every pass applies {@link io.kvledger.journal.EntryRules},
 * the order rules {@code verify} lists (one header, seqs up by one, times that never go back, causes
 * that are earlier inputs), so that no reading command answers from what {@code verify} would flag
 * without saying so. {@link io.kvledger.journal.StagedDir} builds an imported journal beside its
 * destination and moves it there whole. {@link io.kvledger.journal.ServiceClock} is the one time
 * axis of every live writer (node, proxy): epoch nanoseconds that never go back, so their
 * journals merge by event time.
 *
 * <p>Depends on {@code io.kvledger.core}, {@code io.kvledger.journal.format},
 * {@code io.kvledger.journal.json}, Chronicle Queue, msgpack-core and the wire module's Python-value codec
 * ({@code io.kvledger.wire.PyValues}) and in-place writer ({@code MsgpackWriter}, which the
 * group buffer is written with); nothing here depends on the simulator
 * ({@code io.kvledger.node.sim} adapts the simulator to it).
 */
package io.kvledger.journal;
