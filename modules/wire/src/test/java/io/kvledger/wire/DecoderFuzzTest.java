package io.kvledger.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.PythonNotifyListener.Outcome;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Throws random and mutated frames at the decoder. Budget: {@code -Dkvledger.fuzz.budget=N}
 * frames (default 20,000); seed: {@code -Dkvledger.fuzz.seed=S} (default fixed). Every failure
 * message names the seed, the frame index and its hex.
 *
 * <p>Checked for every frame: no exception escapes; the result is a value or a rejection with a
 * reason and detail; the decode allocates at most 64 KiB plus 32 bytes per frame byte (nothing
 * sized by a header's claim); decoded values re-encode to frames that decode to the same value,
 * and are frames the Python listener handles the same way (except empty remote_blocks, which it
 * raises on); the event mapping never throws either. Decoded plus rejected equals the budget.
 * Allocation is measured on a second pass over the same frames, after the first pass has
 * loaded the classes and linked the call sites those frames reach.
 */
class DecoderFuzzTest {

    static final int BUDGET = Integer.getInteger("kvledger.fuzz.budget", 20_000);
    static final long SEED = Long.getLong("kvledger.fuzz.seed", 0x6b766c65L);

    @Test
    void randomAndMutatedFramesNeverEscapeTheDecoder() {
        FrameFuzz fuzz = new FrameFuzz(SEED);
        NotifyDecoder decoder = new NotifyDecoder();
        NotifyEncoder encoder = new NotifyEncoder();
        NotifyEvents events = new NotifyEvents();
        Map<RejectReason, Integer> reasons = new EnumMap<>(RejectReason.class);
        int decoded = 0;
        int rejected = 0;
        byte[][] frames = new byte[BUDGET][];
        for (int i = 0; i < BUDGET; i++) {
            frames[i] = fuzz.next();
            // first pass: links every call site and loads every class on the paths these frames
            // take, so the second pass measures the decode's own allocation only
            decoder.decode(frames[i]);
        }
        for (int i = 0; i < BUDGET; i++) {
            byte[] f = frames[i];
            String where = "seed " + SEED + " frame " + i + " hex " + Frames2.hex(f);
            java.util.concurrent.atomic.AtomicReference<DecodeResult<NotifyMessage>> out = new java.util.concurrent.atomic.AtomicReference<>();
            long alloc = Frames2.allocatedBy(() -> out.set(decoder.decode(f)));
            assertThat(out.get()).as(where).isNotNull();
            assertThat(alloc).as("allocation, " + where).isLessThan(64 * 1024 + 32L * f.length);
            switch (out.get()) {
                case DecodeResult.Ok<NotifyMessage> ok -> {
                    decoded++;
                    NotifyMessage m = ok.value();
                    assertThat(decoder.decode(encoder.encode(m))).as("re-encode, " + where).isEqualTo(ok);
                    Outcome py = PythonNotifyListener.verdict(f).outcome();
                    boolean emptyBlocks = m instanceof NotifyMessage.RemoteBlocks rb && rb.blockNotifyList().isEmpty();
                    assertThat(py).as("python outcome, " + where).isEqualTo(emptyBlocks ? Outcome.RAISES : expected(m));
                }
                case DecodeResult.Rejected<NotifyMessage> r -> {
                    rejected++;
                    assertThat(r.rejection().detail()).as(where).isNotBlank();
                    reasons.merge(r.rejection().reason(), 1, Integer::sum);
                }
            }
            NodeEvent e = events.toEvent(f, i);
            assertThat(e.atNs()).isEqualTo(i);
        }
        assertThat(decoded + rejected).isEqualTo(BUDGET);
        assertThat(decoded).as("the fuzzer must also produce valid frames").isPositive();
        assertThat(reasons).as("the fuzzer must reach the common rejections")
                .containsKeys(RejectReason.TRUNCATED, RejectReason.NOT_UTF8, RejectReason.LENGTH_CLAIM_EXCEEDS_FRAME,
                        RejectReason.WRONG_FIELD_TYPE, RejectReason.UNKNOWN_TYPE, RejectReason.MISSING_FIELD);
    }

    private static Outcome expected(NotifyMessage m) {
        return switch (m) {
            case NotifyMessage.RemoteBlocks rb -> Outcome.REMOTE_BLOCKS;
            case NotifyMessage.WriteDone wd -> Outcome.WRITE_DONE;
            case NotifyMessage.Release r -> Outcome.RELEASE;
            case NotifyMessage.RawCompletion c -> Outcome.COMPLETION;
        };
    }
}
