package io.kvledger.rdma.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.testing.Await;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Which endpoints get peer error handling, per mode; AUTO keeps shared memory for this host. */
class UcxErrorHandlingChoiceTest {

    @Test
    void autoUsesSharedMemoryForThisHostAndPeerErrorHandlingForOthers() {
        assumeTrue(Ucx.load().loaded(), () -> "UCX not available here: " + Ucx.load().detail());
        try (UcxTransferEngine auto = UcxTransferEngine.open(EngineOptions.defaults().withName("auto")).orElseThrow();
             UcxTransferEngine peer = UcxTransferEngine.open(EngineOptions.defaults().withName("peer")
                     .withErrorHandling(EngineOptions.ErrorHandling.PEER)).orElseThrow();
             UcxTransferEngine none = UcxTransferEngine.open(EngineOptions.defaults().withName("none")
                     .withErrorHandling(EngineOptions.ErrorHandling.NONE)).orElseThrow()) {
            assertThat(auto.options().errorHandling()).as("the default").isEqualTo(EngineOptions.ErrorHandling.AUTO);
            MemoryRegion r = auto.register("kv", 1 << 20).orElseThrow();
            RegionDescriptor here = r.descriptor();
            RegionDescriptor elsewhere = RegionDescriptor.of(here.engineKind(), here.engineId(), "other-host/boot",
                    here.regionId(), here.name(), here.baseAddress(), here.length(), here.workerAddress(), here.rkey())
                    .orElseThrow();
            assertThat(auto.peerErrorHandling(here)).isFalse();
            assertThat(auto.peerErrorHandling(elsewhere)).isTrue();
            assertThat(peer.peerErrorHandling(here)).isTrue();
            assertThat(none.peerErrorHandling(elsewhere)).isFalse();
            assertThat(auto.describe()).contains("error handling auto");
            // and an AUTO engine moves bytes to itself over the same-host path
            MemoryRegion other = auto.register("kv2", 1 << 20).orElseThrow();
            Session s = auto.openSession(other, here).orElseThrow();
            assertThat(Await.event(s.write(1, OffsetBatch.single(0, 0, 1 << 20)), Duration.ofSeconds(20)).succeeded())
                    .isTrue();
        }
    }
}
