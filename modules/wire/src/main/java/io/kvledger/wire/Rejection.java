package io.kvledger.wire;

import java.util.Objects;

/**
 * Why a frame was not accepted.
 *
 * @param reason                  the reason, with a permanent code
 * @param detail                  what exactly was wrong, for people (field, offset, values)
 * @param wouldKillPythonListener whether the same bytes raise out of the Python receiver's
 *                                handler, which ends that thread (for notify frames, the notify
 *                                listener: {@link PythonNotifyListener}; for handshake requests,
 *                                the handshake server thread)
 */
public record Rejection(RejectReason reason, String detail, boolean wouldKillPythonListener) {

    public Rejection {
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(detail, "detail");
    }

    /** {@code "REASON: detail"}, the text rejection events carry. */
    public String text() {
        return reason.name() + ": " + detail;
    }

    Rejection withKill(boolean kill) {
        return new Rejection(reason, detail, kill);
    }
}
