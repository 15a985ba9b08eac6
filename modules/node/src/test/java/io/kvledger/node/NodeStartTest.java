package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A node that cannot start says why in one message and leaves nothing behind. */
class NodeStartTest {

    @TempDir
    Path dir;

    @Test
    void aNodeWhosePortsAreTakenFailsWithoutCreatingItsJournal() {
        int base = TestNodes.freePortBase(2);
        NodeService first = NodeService.start(TestNodes.options("P0",
                TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1), dir.resolve("P0"))
                .withEngine(NodeOptions.EngineKind.NONE));
        try {
            assertThatThrownBy(() -> NodeService.start(TestNodes.options("P1",
                    TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1), dir.resolve("P1"))
                    .withEngine(NodeOptions.EngineKind.NONE)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(String.valueOf(base + 1));
            assertThat(Files.exists(dir.resolve("P1"))).as("no journal for a node that never started").isFalse();
            assertThat(first.isRunning()).isTrue();
        } finally {
            first.close();
        }
    }

    @Test
    void aJournalHeldByARunningNodeIsRefusedToASecondOne() {
        int base = TestNodes.freePortBase(4);
        NodeService first = NodeService.start(TestNodes.options("P0",
                TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1), dir.resolve("P0"))
                .withEngine(NodeOptions.EngineKind.NONE));
        try {
            assertThatThrownBy(() -> NodeService.start(TestNodes.options("P0",
                    TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base + 2, base + 3), dir.resolve("P0"))
                    .withEngine(NodeOptions.EngineKind.NONE)))
                    .hasMessageContaining("already open for writing");
            assertThat(first.isRunning()).isTrue();
        } finally {
            first.close();
        }
    }
}
