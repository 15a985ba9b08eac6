package io.kvledger.journal;

import java.nio.file.Path;

/** The child JVM of {@link JsonLinesImportLimitsTest}: imports a JSON-lines file until it is killed. */
public final class ImportChild {

    private ImportChild() {}

    public static void main(String[] args) {
        System.out.println("importing");
        System.out.flush();
        JsonLines.importFile(Path.of(args[0]), Path.of(args[1]), null);
        System.out.println("imported");
    }
}
