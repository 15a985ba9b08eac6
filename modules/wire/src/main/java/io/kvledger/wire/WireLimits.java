package io.kvledger.wire;

/**
 * Bounds a decoder applies to untrusted frames.
 *
 * @param maxFrameBytes      frames longer than this are rejected with
 *                           {@link RejectReason#FRAME_TOO_LARGE} without being parsed
 * @param maxNestingDepth    containers nested deeper than this (inside fields the decoder does
 *                           not know and skips) are rejected with {@link RejectReason#NESTING_TOO_DEEP}
 * @param keptRejectedBytes  how many leading bytes of an over-size frame a rejection event keeps
 *                           (the frame's full length is in the reason); frames within the limit
 *                           are always kept whole
 */
public record WireLimits(int maxFrameBytes, int maxNestingDepth, int keptRejectedBytes) {

    /** 4 MiB frames (a 1M-token context in 16-token blocks needs about 330 KB), depth 32, 64 KiB kept. */
    public static final WireLimits DEFAULT = new WireLimits(4 << 20, 32, 64 << 10);

    public WireLimits {
        if (maxFrameBytes < 1) {
            throw new IllegalArgumentException("maxFrameBytes must be positive: " + maxFrameBytes);
        }
        if (maxNestingDepth < 1) {
            throw new IllegalArgumentException("maxNestingDepth must be positive: " + maxNestingDepth);
        }
        if (keptRejectedBytes < 0) {
            throw new IllegalArgumentException("keptRejectedBytes must not be negative: " + keptRejectedBytes);
        }
    }

    public WireLimits withMaxFrameBytes(int bytes) {
        return new WireLimits(bytes, maxNestingDepth, keptRejectedBytes);
    }
}
