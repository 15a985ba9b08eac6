/**
 * JMH benchmarks and measured runners, one class per question (see {@code benchmarks/README.md}
 * for each question, command and figures). Benchmarks fork one JVM with the project's JVM flags
 * in {@code @Fork(jvmArgsAppend)}.
 *
 * <p>May depend on every kvledger module and on JMH; nothing depends on this package.
 */
package io.kvledger.bench;
