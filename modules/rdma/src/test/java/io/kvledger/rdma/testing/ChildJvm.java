package io.kvledger.rdma.testing;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Command lines for child JVMs: this JVM's java, the project's JVM flags, this classpath. */
public final class ChildJvm {

    /**
     * The project's flags ({@code kvledger.jvm.flags} of the root pom), which surefire passes in
     * as a system property; this copy is used only when a test runs outside Maven.
     */
    private static final String FALLBACK_FLAGS = "--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow "
            + "-Dchronicle.analytics.disable=true -Dchronicle.announcer.disable=true";

    private ChildJvm() {}

    /** The JVM flags every kvledger JVM runs with. */
    public static List<String> flags() {
        String f = System.getProperty("kvledger.jvm.flags", FALLBACK_FLAGS).trim();
        return f.isEmpty() ? List.of() : Arrays.asList(f.split("\\s+"));
    }

    /** {@code java <flags> <extra> -cp <this classpath> mainClass args}. */
    public static List<String> command(List<String> extraJvmArgs, Class<?> mainClass, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(flags());
        cmd.addAll(extraJvmArgs);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass.getName());
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }
}
