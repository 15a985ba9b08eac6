package io.kvledger.wire;

/**
 * Internal control flow of the decoders: thrown by {@link MsgpackReader} at the first problem and
 * caught by the decoder's entry point, which turns it into a {@link DecodeResult.Rejected}. Never
 * leaves this package. Carries no stack trace (rejections are routine, not bugs).
 */
final class WireReject extends RuntimeException {

    private static final long serialVersionUID = 1L;

    final RejectReason reason;

    WireReject(RejectReason reason, String detail) {
        super(detail, null, false, false);
        this.reason = reason;
    }

    /** The same rejection with the first {@code label} in its detail replaced by {@code precise}. */
    WireReject relabel(String label, String precise) {
        String d = getMessage();
        int at = d.indexOf(label);
        return new WireReject(reason, at < 0 ? precise + ": " + d : d.substring(0, at) + precise + d.substring(at + label.length()));
    }

    Rejection toRejection() {
        return new Rejection(reason, getMessage(), false);
    }
}
