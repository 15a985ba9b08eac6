package io.kvledger.core.moriio;

import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Request-id and transfer-id conventions of the MoRIIO connector (protocol spec sections 1.5 and
 * 2.3): the peer addresses the toy proxy embeds in the request id, and the transfer id the
 * scheduler synthesizes when the llm-d sidecar sends none.
 *
 * <p>The patterns are compiled with {@link Pattern#UNIX_LINES} so that they behave as Python
 * {@code re} without flags: {@code .} matches every character except {@code '\n'} (including
 * {@code '\r'} and U+0085 (NEL)), and {@code $} matches at the end of the input or just
 * before a final {@code '\n'}. Matching is a search ({@link Matcher#find()}), as
 * {@code re.search}.
 */
public final class RequestIds {

    /** {@code _PREFILL_ZMQ_RE}: {@code ___prefill_addr_(.+?)___decode_addr_} (non-greedy). */
    private static final Pattern PREFILL_ZMQ =
            Pattern.compile("___prefill_addr_(.+?)___decode_addr_", Pattern.UNIX_LINES);

    /**
     * {@code _DECODE_ZMQ_RE}: {@code ___decode_addr_(.+)_[0-9a-f]{32}(?:-.*)?$} (greedy, lowercase
     * 32-hex uuid, optional {@code -...} tail vLLM appends).
     */
    private static final Pattern DECODE_ZMQ =
            Pattern.compile("___decode_addr_(.+)_[0-9a-f]{32}(?:-.*)?$", Pattern.UNIX_LINES);

    private static final String SIDECAR_PREFIX = "sidecar-";

    private RequestIds() {}

    /**
     * {@code get_peer_zmq_from_request_id(request_id, is_producer)} (newest semantics: no match
     * gives empty rather than {@code ValueError}).
     *
     * @param requestId the scheduler request id, possibly wrapped by vLLM
     *     ({@code cmpl-<id>-<seq>-<8 hex>}); non-null
     * @param isProducer {@code true} on P, which looks for the <em>decode</em> address
     *     (greedy pattern); {@code false} on D, which looks for the <em>prefill</em> address
     *     (non-greedy pattern)
     * @return group 1 of the first match (the peer's {@code zmq_address} text, unparsed), or empty
     */
    public static Optional<String> peerZmqFromRequestId(String requestId, boolean isProducer) {
        long span = peerZmqSpan(requestId, isProducer);
        return span < 0 ? Optional.empty() : Optional.of(requestId.substring(spanStart(span), spanEnd(span)));
    }

    /**
     * Where {@link #peerZmqFromRequestId} finds the peer address, without allocating: group 1's
     * start and end packed as {@code (start << 32) | end} (read them with {@link #spanStart} and
     * {@link #spanEnd}), or -1 when the id embeds none.
     *
     * <p>An id without {@code '\n'} (every id vLLM makes) is scanned directly; the scan gives the
     * patterns' match exactly: with no line break, {@code .} matches every character and
     * {@code $} only the end, so the prefill address ends at the first {@code ___decode_addr_}
     * at least one character after {@code ___prefill_addr_} (non-greedy), and the decode address
     * at the last {@code _} that is followed by 32 lowercase hex digits and then the end or a
     * {@code -} (greedy), at least one character after the first {@code ___decode_addr_} (a
     * later start can only find a subset of those ends). An id with a line break goes through
     * the regular expressions.
     */
    public static long peerZmqSpan(String requestId, boolean isProducer) {
        Objects.requireNonNull(requestId, "requestId");
        if (requestId.indexOf('\n') >= 0) {
            Matcher m = (isProducer ? DECODE_ZMQ : PREFILL_ZMQ).matcher(requestId);
            return m.find() ? span(m.start(1), m.end(1)) : -1;
        }
        return isProducer ? decodeSpan(requestId) : prefillSpan(requestId);
    }

    /** The start of a span from {@link #peerZmqSpan}. */
    public static int spanStart(long span) {
        return (int) (span >>> 32);
    }

    /** The end (exclusive) of a span from {@link #peerZmqSpan}. */
    public static int spanEnd(long span) {
        return (int) span;
    }

    private static long span(int start, int end) {
        return ((long) start << 32) | end;
    }

    private static final String PREFILL_MARK = "___prefill_addr_";
    private static final String DECODE_MARK = "___decode_addr_";
    private static final int UUID_HEX = 32;

    private static long prefillSpan(String id) {
        int i = id.indexOf(PREFILL_MARK);
        if (i < 0) {
            return -1;
        }
        int start = i + PREFILL_MARK.length();
        int end = id.indexOf(DECODE_MARK, start + 1);
        return end < 0 ? -1 : span(start, end);
    }

    private static long decodeSpan(String id) {
        int i = id.indexOf(DECODE_MARK);
        if (i < 0) {
            return -1;
        }
        int start = i + DECODE_MARK.length();
        int len = id.length();
        for (int e = len - UUID_HEX - 1; e > start; e--) {
            if (id.charAt(e) != '_') {
                continue;
            }
            int after = e + 1 + UUID_HEX;
            if (after != len && id.charAt(after) != '-') {
                continue;
            }
            if (lowerHex(id, e + 1, after)) {
                return span(start, e);
            }
        }
        return -1;
    }

    private static boolean lowerHex(String s, int from, int to) {
        for (int k = from; k < to; k++) {
            char ch = s.charAt(k);
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
                return false;
            }
        }
        return true;
    }

    /**
     * The request id the toy proxy sends as {@code X-Request-Id} to both legs:
     * {@code "___prefill_addr_{P}___decode_addr_{D}_{uuidHex32}"}, with {@code P} and {@code D}
     * in {@link ZmqAddress#format()} form. {@code uuidHex32} is used as given; the proxy passes
     * {@code uuid4().hex} (32 lowercase hex digits), which is what the producer-side pattern
     * requires.
     */
    public static String proxyRequestId(ZmqAddress prefill, ZmqAddress decode, String uuidHex32) {
        Objects.requireNonNull(uuidHex32, "uuidHex32");
        return "___prefill_addr_" + prefill.format() + "___decode_addr_" + decode.format() + "_"
                + uuidHex32;
    }

    /**
     * The transfer id the scheduler synthesizes when {@code kv_transfer_params} carries none
     * (llm-d sidecar): {@code "sidecar-" + requestId}.
     */
    public static String synthesizedTransferId(String requestId) {
        return SIDECAR_PREFIX + Objects.requireNonNull(requestId, "requestId");
    }
}
