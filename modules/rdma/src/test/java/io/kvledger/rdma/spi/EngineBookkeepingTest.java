package io.kvledger.rdma.spi;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferOp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class EngineBookkeepingTest {

    private static final class Region extends EngineRegion {
        Region(Arena arena, MemorySegment segment, RegionDescriptor d) {
            super(7, "kv", arena, segment, d);
        }
    }

    private static final class TestSession extends EngineSession<Region> {
        TestSession(Region local, RegionDescriptor remote) {
            super(local, remote);
        }

        @Override
        public Result<PendingTransfer> post(long transferId, TransferOp op, OffsetBatch batch) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void close() {
            markClosed();
        }
    }

    @Test
    void a_region_keeps_what_it_was_given_and_closing_only_refuses() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64);
            RegionDescriptor d = descriptor(seg);
            Region r = new Region(arena, seg, d);
            assertThat(r.id()).isEqualTo(7);
            assertThat(r.name()).isEqualTo("kv");
            assertThat(r.length()).isEqualTo(64);
            assertThat(r.descriptor()).isSameAs(d);
            assertThat(r.arena()).isSameAs(arena);
            assertThat(r.isOpen()).isTrue();
            r.close();
            r.close();
            assertThat(r.isOpen()).isFalse();
            assertThat(seg.scope().isAlive()).as("the memory stays until the engine closes").isTrue();
        }
    }

    @Test
    void a_session_goes_connecting_open_failed_closed_and_never_back() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64);
            Region r = new Region(arena, seg, descriptor(seg));
            TestSession s = new TestSession(r, r.descriptor());
            assertThat(s.local()).isSameAs(r);
            assertThat(s.state()).isEqualTo(Session.State.CONNECTING);
            assertThat(s.failure()).isNull();
            assertThat(s.markOpen()).isTrue();
            assertThat(s.markOpen()).isFalse();
            assertThat(s.state()).isEqualTo(Session.State.OPEN);
            assertThat(s.markFailed(FailureCode.BAD_RKEY, "bad key")).isTrue();
            assertThat(s.markOpen()).isFalse();
            assertThat(s.state()).isEqualTo(Session.State.FAILED);
            assertThat(s.markClosed()).isTrue();
            assertThat(s.failure().message()).as("a failure stays the reason after close").isEqualTo("bad key");
            assertThat(s.markClosed()).isFalse();
            assertThat(s.markFailed(FailureCode.ENDPOINT_CLOSED, "late")).isFalse();
            assertThat(s.state()).isEqualTo(Session.State.CLOSED);

            TestSession t = new TestSession(r, r.descriptor());
            t.close();
            assertThat(t.failure().code()).isEqualTo(FailureCode.ENDPOINT_CLOSED);
            assertThat(t.failure().message()).isEqualTo("session closed");
        }
    }

    private static RegionDescriptor descriptor(MemorySegment seg) {
        return RegionDescriptor.of("test", UUID.randomUUID(), 7, "kv", seg.address(), seg.byteSize(), new byte[16],
                new byte[16]).orElseThrow();
    }
}
