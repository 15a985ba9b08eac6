package io.kvledger.cli.tidy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;

/** The project root the tidy tests read, two levels above the module directory surefire runs in. */
final class ProjectRoot {

    private ProjectRoot() {}

    static Path find() {
        Path r = Path.of("").toAbsolutePath().getParent().getParent();
        assertThat(Files.isDirectory(r.resolve("modules/core/src/main/java")))
                .as("project root not found from %s; run from the modules/cli directory", Path.of("").toAbsolutePath())
                .isTrue();
        return r;
    }
}
