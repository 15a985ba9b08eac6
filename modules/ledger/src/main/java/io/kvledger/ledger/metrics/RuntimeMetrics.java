package io.kvledger.ledger.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The process's and the JVM's meters, every one present from the first scrape:
 * <ul>
 *   <li>{@code process_cpu_seconds_total}, {@code process_resident_memory_bytes} (Linux: VmRSS of
 *       {@code /proc/self/status}; absent elsewhere), {@code process_start_time_seconds},
 *       {@code process_open_fds}, {@code process_max_fds} (Unix), named as Prometheus's own
 *       clients name them;</li>
 *   <li>{@code jvm_gc_collections_total{gc}} and {@code jvm_gc_collection_seconds_total{gc}}, one
 *       series per collector, from its management bean (so they exist before the first
 *       collection);</li>
 *   <li>Micrometer's JVM memory and thread meters: {@code jvm_memory_used_bytes{area,id}},
 *       {@code jvm_memory_committed_bytes}, {@code jvm_memory_max_bytes}, {@code jvm_buffer_*},
 *       {@code jvm_threads_live_threads}, {@code jvm_threads_states_threads{state}} and the rest.</li>
 * </ul>
 * The meters read the beans at each scrape. Micrometer holds what a meter reads weakly: the
 * registry's owner must hold this binder (it holds the beans) for as long as it scrapes.
 */
public final class RuntimeMetrics implements MeterBinder {

    private static final Path STATUS = Path.of("/proc/self/status");

    private final Tags tags;
    /** The beans the meters read, held here because Micrometer holds them weakly. */
    private final List<Object> held = new ArrayList<>();

    /** @param tags tags every meter carries (a node's {@code node} and {@code role}, a proxy's {@code proxy}) */
    public RuntimeMetrics(Tags tags) {
        this.tags = tags;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        held.add(os);
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            FunctionCounter.builder("process_cpu_seconds", sun, b -> Math.max(0, b.getProcessCpuTime()) / 1e9)
                    .description("CPU time the process used (user and system)").tags(tags).register(registry);
        }
        if (os instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
            Gauge.builder("process_open_fds", unix, com.sun.management.UnixOperatingSystemMXBean::getOpenFileDescriptorCount)
                    .description("Open file descriptors").tags(tags).register(registry);
            Gauge.builder("process_max_fds", unix, com.sun.management.UnixOperatingSystemMXBean::getMaxFileDescriptorCount)
                    .description("Limit of open file descriptors").tags(tags).register(registry);
        }
        if (Files.isReadable(STATUS) && residentBytes() >= 0) {
            Gauge.builder("process_resident_memory_bytes", this, m -> residentBytes())
                    .description("Resident set size (VmRSS)").tags(tags).register(registry);
        }
        long startMs = ManagementFactory.getRuntimeMXBean().getStartTime();
        Gauge.builder("process_start_time_seconds", () -> startMs / 1000.0)
                .description("Start time of the process since the Unix epoch").tags(tags).register(registry);
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            held.add(gc);
            FunctionCounter.builder("jvm_gc_collections", gc, b -> Math.max(0, b.getCollectionCount()))
                    .description("Collections this collector ran").tags(tags).tag("gc", gc.getName()).register(registry);
            FunctionCounter.builder("jvm_gc_collection_seconds", gc, b -> Math.max(0, b.getCollectionTime()) / 1e3)
                    .description("Time this collector spent collecting (as its bean reports it)")
                    .tags(tags).tag("gc", gc.getName()).register(registry);
        }
        new JvmMemoryMetrics(tags).bindTo(registry);
        new JvmThreadMetrics(tags).bindTo(registry);
    }

    /** VmRSS from {@code /proc/self/status}, in bytes; -1 when it cannot be read. */
    static double residentBytes() {
        try {
            for (String line : Files.readAllLines(STATUS)) {
                if (line.startsWith("VmRSS:")) {
                    String[] f = line.substring(6).trim().split("\\s+");
                    return Long.parseLong(f[0]) * 1024.0; // the kernel writes "kB" (KiB)
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
