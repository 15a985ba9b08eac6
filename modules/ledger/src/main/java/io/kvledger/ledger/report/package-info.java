/**
 * What the journal commands print, as libraries the CLI's commands call: the replay summary and
 * its verification ({@link io.kvledger.ledger.report.ReplayReport}, {@code kvledger replay}), the
 * latency statistics ({@link io.kvledger.ledger.report.StatsReport}, {@code kvledger stats}), the
 * hang findings and the requests still in flight ({@link io.kvledger.ledger.report.HangsReport},
 * {@code kvledger hangs}, with the bug classes' titles of
 * {@link io.kvledger.ledger.report.BugClasses}), the timeline of one request or transfer ({@link io.kvledger.ledger.report.InspectReport},
 * {@code kvledger inspect}, also as one HTML page), the verdict over the journals' checks
 * ({@link io.kvledger.ledger.report.VerifyReport}, {@code kvledger verify}) and the summary of a
 * merge ({@link io.kvledger.ledger.report.MergeReport}, {@code kvledger merge}), as text or JSON;
 * the entries of journals in event-time order ({@link io.kvledger.ledger.report.DumpReport},
 * {@code kvledger dump}), one line each as {@link io.kvledger.ledger.report.EntryText} writes them,
 * of the types a {@link io.kvledger.ledger.report.TypeFilter} selects ({@code --type}); the summary
 * of an OTLP export ({@link io.kvledger.ledger.report.ExportReport}, {@code kvledger export}). The forms
 * they share are {@link io.kvledger.ledger.report.ReportText}'s: abbreviated request ids, relative
 * and journal times, node lines, aligned columns. The commands keep their options, open the
 * journals, show progress and tell what the readers skipped; the reports do the rest.
 *
 * <p>May depend on kvledger-core, kvledger-journal, the ledger's {@code replay}, {@code diagnosis}, {@code otlp},
 * {@code text} and {@code web} packages, HdrHistogram and the JDK; no picocli. The CLI depends on it.
 */
package io.kvledger.ledger.report;
