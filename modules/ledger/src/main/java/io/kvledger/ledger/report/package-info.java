/**
 * What the journal commands print, as libraries the CLI's commands call: the replay summary and
 * its verification ({@link io.kvledger.ledger.report.ReplayReport}, {@code kvledger replay}) and the
 * latency statistics ({@link io.kvledger.ledger.report.StatsReport}, {@code kvledger stats}), as
 * text or JSON, and the timeline of one request or transfer
 * ({@link io.kvledger.ledger.report.InspectReport}, {@code kvledger inspect}: text, JSON or one
 * HTML page), the verdict of {@code kvledger verify}
 * ({@link io.kvledger.ledger.report.VerifyReport}, over the replay library's checks), with the forms they share ({@link io.kvledger.ledger.report.ReportText}: abbreviated
 * request ids, relative times, node lines, aligned columns). The commands keep their options,
 * open the journals, show progress and tell what the readers skipped; the reports do the rest.
 *
 * <p>May depend on kvledger-core, kvledger-journal, the ledger's {@code replay}, {@code diagnosis},
 * {@code text} and {@code web} packages, HdrHistogram and the JDK; no picocli. The CLI depends on it.
 */
package io.kvledger.ledger.report;
