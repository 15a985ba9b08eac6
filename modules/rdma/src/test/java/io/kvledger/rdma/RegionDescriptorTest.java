package io.kvledger.rdma;

import static org.assertj.core.api.Assertions.assertThat;

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
        byte[] v2 = sample().encode();
        v2[4] = 2;
        assertThat(RegionDescriptor.decode(v2).errorOrNull().message()).contains("version 2");
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
}
