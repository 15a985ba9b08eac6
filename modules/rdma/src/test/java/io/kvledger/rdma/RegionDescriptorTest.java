package io.kvledger.rdma;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class RegionDescriptorTest {

    static final UUID ENGINE = UUID.fromString("5f1d3e5c-0000-4000-8000-00000000abcd");

    static RegionDescriptor sample() {
        byte[] worker = new byte[186];
        byte[] rkey = new byte[47];
        for (int i = 0; i < worker.length; i++) {
            worker[i] = (byte) (i * 7);
        }
        for (int i = 0; i < rkey.length; i++) {
            rkey[i] = (byte) (255 - i);
        }
        return RegionDescriptor.of("ucx", ENGINE, "node-7/boot-1", 3, "kv-layer0", 0x7f0000001000L, 1 << 20, worker, rkey)
                .orElseThrow();
    }

    @Test
    void roundTripsInBinaryAndText() {
        RegionDescriptor d = sample();
        RegionDescriptor bin = RegionDescriptor.decode(d.encode()).orElseThrow();
        RegionDescriptor txt = RegionDescriptor.parse("  " + d.toText() + "\n").orElseThrow();
        for (RegionDescriptor r : new RegionDescriptor[] {bin, txt}) {
            assertThat(r).isEqualTo(d);
            assertThat(r.engineKind()).isEqualTo("ucx");
            assertThat(r.engineId()).isEqualTo(ENGINE);
            assertThat(r.regionId()).isEqualTo(3);
            assertThat(r.hostId()).isEqualTo("node-7/boot-1");
            assertThat(r.isOnThisHost()).isFalse();
            assertThat(r.name()).isEqualTo("kv-layer0");
            assertThat(r.baseAddress()).isEqualTo(0x7f0000001000L);
            assertThat(r.length()).isEqualTo(1 << 20);
            assertThat(r.workerAddress()).isEqualTo(d.workerAddress());
            assertThat(r.rkey()).isEqualTo(d.rkey());
            assertThat(r.sameRegion(d)).isTrue();
        }
        assertThat(d.toText()).startsWith(RegionDescriptor.TEXT_PREFIX).doesNotContain("=", "+", "/", " ");
        assertThat(d.toString()).contains("kv-layer0", "186 B", "47 B");
    }

    @Test
    void descriptorsMadeHereSayTheyAreFromThisHost() {
        byte[] b = new byte[8];
        RegionDescriptor here = RegionDescriptor.of("ucx", ENGINE, 1, "x", 0, 1, b, b).orElseThrow();
        assertThat(here.hostId()).isEqualTo(HostId.current()).isNotBlank();
        assertThat(RegionDescriptor.decode(here.encode()).orElseThrow().isOnThisHost()).isTrue();
    }

    @Test
    void accessorsHandOutCopies() {
        RegionDescriptor d = sample();
        d.rkey()[0] ^= 1;
        d.workerAddress()[0] ^= 1;
        assertThat(RegionDescriptor.decode(d.encode()).orElseThrow()).isEqualTo(sample());
    }

    @Test
    void everySingleBitFlipIsCaughtBeforeItReachesUcx() {
        byte[] good = sample().encode();
        for (int i = 0; i < good.length; i++) {
            for (int bit = 0; bit < 8; bit++) {
                byte[] bad = good.clone();
                bad[i] ^= (byte) (1 << bit);
                Result<RegionDescriptor> r = RegionDescriptor.decode(bad);
                assertThat(r.errorOrNull()).as("flip bit %d of byte %d", bit, i).isNotNull();
                assertThat(r.errorOrNull().code()).isEqualTo(FailureCode.BAD_DESCRIPTOR);
            }
        }
    }

    @Test
    void everyTruncationAndExtensionIsRefused() {
        byte[] good = sample().encode();
        for (int n = 0; n < good.length; n++) {
            assertThat(RegionDescriptor.decode(Arrays.copyOf(good, n)).errorOrNull()).as("first %d bytes", n)
                    .isNotNull().extracting(TransferError::code).isEqualTo(FailureCode.BAD_DESCRIPTOR);
        }
        assertThat(RegionDescriptor.decode(Arrays.copyOf(good, good.length + 1)).errorOrNull().code())
                .isEqualTo(FailureCode.BAD_DESCRIPTOR);
    }

    @Test
    void badTextSaysWhatIsWrong() {
        assertThat(RegionDescriptor.parse(null).errorOrNull().code()).isEqualTo(FailureCode.BAD_DESCRIPTOR);
        assertThat(RegionDescriptor.parse("mori:abc").errorOrNull().message()).contains("kvrd1:");
        assertThat(RegionDescriptor.parse("kvrd1:***").errorOrNull().message()).contains("base64");
        assertThat(RegionDescriptor.decode(null).errorOrNull().code()).isEqualTo(FailureCode.BAD_DESCRIPTOR);
        assertThat(RegionDescriptor.decode("not a descriptor at all".getBytes()).errorOrNull().message())
                .contains("magic");
        byte[] v3 = sample().encode();
        v3[4] = 3;
        assertThat(RegionDescriptor.decode(v3).errorOrNull().message()).contains("version 3", "reads 1 and 2");
    }

    @Test
    void buildingOneChecksItsFields() {
        byte[] b = new byte[8];
        assertThat(RegionDescriptor.of("", ENGINE, 1, "x", 0, 1, b, b).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(RegionDescriptor.of("ucx", null, 1, "x", 0, 1, b, b).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(RegionDescriptor.of("ucx", ENGINE, 1, null, 0, 1, b, b).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(RegionDescriptor.of("ucx", ENGINE, 1, "x", 0, 0, b, b).errorOrNull().message()).contains("positive");
        assertThat(RegionDescriptor.of("ucx", ENGINE, 1, "x", 0, 1, null, b).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(RegionDescriptor.of("ucx", ENGINE, 1, "x", 0, 1, b, new byte[1 << 17]).errorOrNull().code())
                .isEqualTo(FailureCode.INVALID_ARGUMENT);
    }

    static RegionDescriptor ownedBy(String host, long pid, long startTicks) {
        byte[] b = new byte[8];
        return RegionDescriptor.of("ucx", ENGINE, host, pid, startTicks, 1, "x", 0, 1, b, b).orElseThrow();
    }

    /**
     * The owner is named by its pid and its start counted from boot, both read from the kernel, so
     * that two JVMs whose wall clocks were stepped between their starts (each works out a start
     * instant from a boot time it read once) agree on it. The same pid with another start is
     * another process: the owner has exited.
     */
    @Test
    void anOwnerIsItsPidAndItsStartSinceBoot() {
        long self = ProcessHandle.current().pid();
        long start = ProcessStart.ofSelf();
        assumeTrue(start > 0, "no /proc/PID/stat here");
        byte[] b = new byte[8];
        RegionDescriptor made = RegionDescriptor.of("ucx", ENGINE, 1, "x", 0, 1, b, b).orElseThrow();
        assertThat(made.ownerPid()).isEqualTo(self);
        assertThat(made.ownerStartTicks()).isEqualTo(start);
        assertThat(RegionDescriptor.decode(made.encode()).orElseThrow().ownerAlive()).isTrue();
        assertThat(ownedBy(HostId.current(), self, start + 1).ownerAlive()).isFalse();
        assertThat(ownedBy(HostId.current(), self, start - 1).ownerAlive()).isFalse();
        assertThat(ownedBy(HostId.current(), self, ProcessStart.UNKNOWN).ownerAlive()).isTrue();
        assertThat(ownedBy("other-host/boot", self, start + 1).ownerAlive()).as("cannot be checked from here").isTrue();
    }

    @Test
    void anOwnerThatExitedIsNotAliveWaitedForOrNot() throws Exception {
        Process sleeper = new ProcessBuilder("sleep", "30").start();
        try {
            long start = ProcessStart.of(sleeper.pid());
            assumeTrue(start > 0, "no /proc/PID/stat here");
            RegionDescriptor d = ownedBy(HostId.current(), sleeper.pid(), start);
            assertThat(d.ownerAlive()).isTrue();
            sleeper.destroyForcibly().waitFor();
            assertThat(d.ownerAlive()).isFalse();
        } finally {
            sleeper.destroyForcibly();
        }
        // the child outlives the shell's own commands (a child that exited before the shell execs
        // could be reaped by the shell: no zombie), then its parent is `sleep`, which never waits
        Process parent = new ProcessBuilder("sh", "-c", "sleep 1 & echo $!; exec sleep 90").start();
        try {
            long zombie = Long.parseLong(new BufferedReader(new InputStreamReader(parent.getInputStream(),
                    StandardCharsets.US_ASCII)).readLine().strip());
            for (int i = 0; i < 6000 && ProcessStart.of(zombie) != ProcessStart.EXITED; i++) { // a busy machine: up to 60 s
                Thread.sleep(10);
            }
            assertThat(ProcessStart.of(zombie)).isEqualTo(ProcessStart.EXITED);
            assertThat(ownedBy(HostId.current(), zombie, ProcessStart.UNKNOWN).ownerAlive()).isFalse();
        } finally {
            parent.destroyForcibly().waitFor();
        }
    }

    @Test
    void theStartIsFieldTwentyTwoCountedAfterTheCommandName() {
        String fields4to21 = " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 ";
        assertThat(ProcessStart.parse("4242 (java) S" + fields4to21 + "987654 1024 0 0")).isEqualTo(987654);
        assertThat(ProcessStart.parse("4242 (a) b (c) 7 8) R" + fields4to21 + "55 1 2")).isEqualTo(55);
        assertThat(ProcessStart.parse("4242 (sh) Z" + fields4to21 + "55 1 2")).isEqualTo(ProcessStart.EXITED);
        assertThat(ProcessStart.parse("4242 (sh) S 1 2 3")).isEqualTo(ProcessStart.UNKNOWN);
        assertThat(ProcessStart.parse("no parenthesis")).isEqualTo(ProcessStart.UNKNOWN);
        assertThat(ProcessStart.parse("4242 (sh) S" + fields4to21 + "x 1 2")).isEqualTo(ProcessStart.UNKNOWN);
    }

    /** A descriptor from a build before version 2 carried a wall-clock start: read as unknown. */
    @Test
    void aVersionOneDescriptorIsReadWithItsOwnersStartUnknown() {
        RegionDescriptor d = ownedBy(HostId.current(), ProcessHandle.current().pid(), 1_796_339_775_000L);
        byte[] v1 = d.encode();
        v1[4] = 1;
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(v1, 0, v1.length - 4);
        java.nio.ByteBuffer.wrap(v1).putInt(v1.length - 4, (int) crc.getValue());
        RegionDescriptor read = RegionDescriptor.decode(v1).orElseThrow();
        assertThat(read.ownerStartTicks()).isEqualTo(ProcessStart.UNKNOWN);
        assertThat(read.ownerAlive()).isTrue();
        assertThat(read.sameRegion(d)).isTrue();
    }
}
