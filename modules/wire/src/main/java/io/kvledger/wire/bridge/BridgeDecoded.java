package io.kvledger.wire.bridge;

import io.kvledger.wire.Rejection;
import java.util.Objects;

/** The outcome of decoding one request frame: a request, or a rejection to answer at once. */
public sealed interface BridgeDecoded {

    /** A well-formed request. */
    record Request(BridgeRequest request) implements BridgeDecoded {
        public Request {
            Objects.requireNonNull(request, "request");
        }
    }

    /**
     * A batch ({@code "hook": "batch"}, {@code args.calls} a list of requests without {@code "v"}):
     * its calls in order, each a {@link Request} or a {@link Rejected} of its own; answered with one
     * reply frame holding each call's reply ({@link BridgeCodec#encodeBatchReply}).
     *
     * @param id      the batch's correlation id
     * @param calls   the calls, in the order the caller made them
     * @param compact whether a call came in the compact form (an array): its reply may then give an
     *                empty answer as the call's id alone ({@link BridgeCodec#encodeBatchReply(long,
     *                java.util.List, boolean)})
     * @param agreed  whether the caller asked for the agreed form ({@code args.agreed}, listed by
     *                {@code hello}): its reply then leaves out each empty answer and each answer
     *                equal to the {@code acted} its call carried ({@link BridgeCodec#agrees})
     * @param brief   with {@code agreed}, whether the caller asked for the brief form too ({@code
     *                args.brief}, listed by {@code hello}): an ok answer to {@code
     *                build_connector_meta} (its metadata) is then left out as well
     */
    record Batch(long id, java.util.List<BridgeDecoded> calls, boolean compact, boolean agreed, boolean brief)
            implements BridgeDecoded {
        public Batch {
            calls = java.util.List.copyOf(calls);
        }
    }

    /**
     * A frame that is not a valid request.
     *
     * @param id        the frame's correlation id when it could be read, else {@code null} (the
     *                  error reply then carries {@code "id": None})
     * @param hook      the hook when it could be read, else {@code null}
     * @param rejection why, with a stable reason code and a detail naming the field
     */
    record Rejected(Long id, BridgeHook hook, Rejection rejection) implements BridgeDecoded {
        public Rejected {
            Objects.requireNonNull(rejection, "rejection");
        }

        /** The text the error reply carries. */
        String error() {
            return rejection.text();
        }
    }
}
