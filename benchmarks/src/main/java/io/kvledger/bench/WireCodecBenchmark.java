package io.kvledger.bench;

import io.kvledger.core.model.TransferId;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.AgentMetadata;
import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.EffectFrames;
import io.kvledger.wire.HandshakeCodec;
import io.kvledger.wire.LayerMap;
import io.kvledger.wire.NotifyDecoder;
import io.kvledger.wire.NotifyEvents;
import io.kvledger.wire.NotifyMessage;
import io.kvledger.wire.OpaqueBytes;
import io.kvledger.wire.OutboundFrame;
import io.kvledger.wire.Registration;
import io.kvledger.wire.RegistrationCodec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Question: how many MoRIIO wire messages per second does one core decode and encode, per
 * message type? Target: at least 1 million {@code remote_blocks} decodes per second.
 *
 * <p>Frames are the wire vectors' (Python msgpack 1.0.3 output): {@code remote_blocks} is the
 * vector with a 162-character proxy request id, a tx-uuid and 7 block ids (290 bytes);
 * {@code remoteBlocks64} carries 64 block ids of 3 to 5 bytes. Decoding returns the typed value
 * ({@code decode*}) or the core's {@code NodeEvent} ({@code toEvent*}); encoding goes from the
 * core's send effect to the frame. One thread, codec instances reused (as a listener thread
 * does).
 */
@State(Scope.Thread)
@Threads(1)
@Fork(value = 1, jvmArgsAppend = {
        "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-Dchronicle.analytics.disable=true", "-Dchronicle.announcer.disable=true",
        "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
        "--add-exports=java.base/jdk.internal.util=ALL-UNNAMED", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED",
        "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
        "--add-opens=jdk.compiler/com.sun.tools.javac=ALL-UNNAMED", "--add-opens=java.base/java.io=ALL-UNNAMED",
        "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
        "--add-opens=java.base/java.util=ALL-UNNAMED"})
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class WireCodecBenchmark {

    static final String REQ_ID = "cmpl-___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_host:10.0.0.2,"
            + "handshake:6301,notify:61005_0123456789abcdef0123456789abcdef-0-1a2b3c4d";
    static final String TID = "tx-2f1c9a4e-7b3d-4c1e-9f00-3a5b6c7d8e9f";
    /** The {@code remote_blocks} wire vector (Python msgpack 1.0.3). */
    static final String REMOTE_BLOCKS_VECTOR = "85a67265715f6964d9a2636d706c2d5f5f5f70726566696c6c5f616464725f686f73743a31302e302e302e312c68616e647368616b653a363330312c6e6f746966793a36313030355f5f5f6465636f64655f616464725f686f73743a31302e302e302e322c68616e647368616b653a363330312c6e6f746966793a36313030355f30313233343536373839616263646566303132333435363738396162636465662d302d3161326233633464ab7472616e736665725f6964d92774782d32663163396134652d376233642d346331652d396630302d336135623663376438653966b1626c6f636b5f6e6f746966795f6c697374970001027fcc80cdffffce00010000ab6465636f64655f72616e6b03a474797065ad72656d6f74655f626c6f636b73";

    private final NotifyDecoder decoder = new NotifyDecoder();
    private final NotifyEvents events = new NotifyEvents();
    private final EffectFrames effectFrames = new EffectFrames();
    private final RegistrationCodec registrationCodec = new RegistrationCodec();
    private final HandshakeCodec handshakeCodec = new HandshakeCodec();

    private Effect.SendRemoteBlocks remoteBlocksEffect;
    private Effect.SendRemoteBlocks remoteBlocks64Effect;
    private Effect.SendRelease releaseEffect;
    private Effect.SendWriteDone writeDoneEffect;
    private Registration registration;
    private AgentMetadata metadata;
    private LayerMap layers;

    private byte[] remoteBlocks;
    private byte[] remoteBlocks64;
    private byte[] release;
    private byte[] writeDone;
    private byte[] completion;
    private byte[] truncated;
    private byte[] registrationFrame;
    private byte[] metadataFrame;
    private byte[] layerMapFrame;

    @Setup
    public void frames() {
        remoteBlocksEffect = new Effect.SendRemoteBlocks("10.0.0.1", 61006, REQ_ID, TransferId.of(TID), List.of(0, 1, 2, 127, 128, 65535, 65536), 3);
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            ids.add(1000 + 37 * i * i);
        }
        remoteBlocks64Effect = new Effect.SendRemoteBlocks("10.0.0.1", 61006, REQ_ID, TransferId.of(TID), ids, 3);
        releaseEffect = new Effect.SendRelease(Effect.Sender.WORKER, "10.0.0.1", 61005, TransferId.of(TID), 8);
        writeDoneEffect = new Effect.SendWriteDone("10.0.0.2", 61005, TID);
        registration = new Registration("P", "10.0.0.1:8100", "host:10.0.0.1,handshake:6301,notify:61005", 2, 4, "WRITE");
        long[] addrs = new long[64];
        for (int i = 0; i < addrs.length; i++) {
            addrs[i] = 140234567680000L + ((long) i << 28);
        }
        metadata = new AgentMetadata("10.0.0.1:6301", OpaqueBytes.of(new byte[256]), addrs, 4096, 262144, "ROCM_AITER_FA");
        LayerMap.Builder b = LayerMap.builder();
        for (int i = 0; i < 64; i++) {
            b.layer("model.layers." + i + ".self_attn.attn", OpaqueBytes.of(new byte[96]));
        }
        layers = b.build();

        remoteBlocks = effectFrames.encode(remoteBlocksEffect).frame();
        if (!HexFormat.of().formatHex(remoteBlocks).equals(REMOTE_BLOCKS_VECTOR)) {
            throw new IllegalStateException("remote_blocks frame is not the wire vector");
        }
        remoteBlocks64 = effectFrames.encode(remoteBlocks64Effect).frame();
        release = effectFrames.encode(releaseEffect).frame();
        writeDone = effectFrames.encode(writeDoneEffect).frame();
        completion = TID.getBytes(StandardCharsets.UTF_8);
        truncated = HexFormat.of().parseHex("82a474797065a772656c65617365ab7472616e736665725f6964a474");
        registrationFrame = registrationCodec.encode(registration);
        metadataFrame = handshakeCodec.encodeMetadata(metadata);
        layerMapFrame = handshakeCodec.encodeLayerMap(layers);
        if (!(decoder.decode(remoteBlocks).valueOrNull() instanceof NotifyMessage.RemoteBlocks)
                || decoder.decode(truncated).isOk()) {
            throw new IllegalStateException("codec sanity check failed");
        }
    }

    // ---------------------------------------------------------------- decode

    @Benchmark
    public DecodeResult<NotifyMessage> decodeRemoteBlocks() {
        return decoder.decode(remoteBlocks);
    }

    @Benchmark
    public NodeEvent toEventRemoteBlocks() {
        return events.toEvent(remoteBlocks, 1L);
    }

    @Benchmark
    public DecodeResult<NotifyMessage> decodeRemoteBlocks64() {
        return decoder.decode(remoteBlocks64);
    }

    @Benchmark
    public DecodeResult<NotifyMessage> decodeRelease() {
        return decoder.decode(release);
    }

    @Benchmark
    public DecodeResult<NotifyMessage> decodeWriteDone() {
        return decoder.decode(writeDone);
    }

    @Benchmark
    public DecodeResult<NotifyMessage> decodeRawCompletion() {
        return decoder.decode(completion);
    }

    /** A rejection, including the model of what the Python listener would do with the frame. */
    @Benchmark
    public DecodeResult<NotifyMessage> decodeRejectedTruncated() {
        return decoder.decode(truncated);
    }

    @Benchmark
    public DecodeResult<Registration> decodeRegistration() {
        return registrationCodec.decode(registrationFrame);
    }

    @Benchmark
    public DecodeResult<AgentMetadata> decodeAgentMetadata64Regions() {
        return handshakeCodec.decodeMetadata(metadataFrame);
    }

    @Benchmark
    public DecodeResult<LayerMap> decodeLayerMap64Layers() {
        return handshakeCodec.decodeLayerMap(layerMapFrame);
    }

    // ---------------------------------------------------------------- encode

    @Benchmark
    public OutboundFrame encodeRemoteBlocks() {
        return effectFrames.encode(remoteBlocksEffect);
    }

    @Benchmark
    public OutboundFrame encodeRemoteBlocks64() {
        return effectFrames.encode(remoteBlocks64Effect);
    }

    @Benchmark
    public OutboundFrame encodeRelease() {
        return effectFrames.encode(releaseEffect);
    }

    @Benchmark
    public OutboundFrame encodeWriteDone() {
        return effectFrames.encode(writeDoneEffect);
    }

    @Benchmark
    public byte[] encodeRegistration() {
        return registrationCodec.encode(registration);
    }

    @Benchmark
    public byte[] encodeAgentMetadata64Regions() {
        return handshakeCodec.encodeMetadata(metadata);
    }

    @Benchmark
    public byte[] encodeLayerMap64Layers() {
        return handshakeCodec.encodeLayerMap(layers);
    }
}
