package io.kvledger.proxy;

import io.kvledger.core.config.TransferMode;
import java.util.List;
import java.util.Map;

/**
 * What a careful router checks (vllm-integration.md section 6), as pure functions: the client's
 * request before any leg is sent (at least as strictly as a node's built-in engine takes it, so
 * that what an engine would refuse is a 400 here, not a 502 after a leg), and the prefill's returned handoff before the decode leg is sent
 * (READ) or let through (WRITE). Each returns null when the input passes, else a one-line reason.
 */
final class Checks {

    static final String PREFILL_MARKER = "___prefill_addr_";
    static final String DECODE_MARKER = "___decode_addr_";

    private Checks() {}

    /**
     * The client request's problem, or null.
     *
     * @param headerRequestId the client's {@code X-Request-Id}, or null
     */
    static String request(Map<String, Object> body, String headerRequestId, boolean chat) {
        if (hasMarker(headerRequestId)) {
            return "the X-Request-Id header contains a peer-address marker (" + PREFILL_MARKER + " or " + DECODE_MARKER
                    + "): the proxy composes those ids itself";
        }
        if (body.get("request_id") instanceof String s && hasMarker(s)) {
            return "request_id contains a peer-address marker (" + PREFILL_MARKER + " or " + DECODE_MARKER + ")";
        }
        Object n = body.get("n");
        if (n != null && !(n instanceof Long l && l == 1)) {
            return "n must be 1 (one choice per request: a prefill hands off one KV cache), got " + quoted(n);
        }
        Object bestOf = body.get("best_of");
        if (bestOf != null && !(bestOf instanceof Long l && l == 1)) {
            return "best_of must be 1, got " + quoted(bestOf);
        }
        if (Boolean.TRUE.equals(body.get("use_beam_search"))) {
            return "beam search is not supported across a prefill/decode split";
        }
        if (!chat) {
            String bad = prompt(body.get("prompt"));
            if (bad != null) {
                return bad;
            }
        } else {
            String bad = messages(body.get("messages"));
            if (bad != null) {
                return bad;
            }
        }
        for (String k : List.of("max_tokens", "max_completion_tokens")) {
            Object v = body.get(k);
            if (v != null && !(v instanceof Long l && l >= 1)) {
                return k + " must be a positive integer, got " + quoted(v);
            }
        }
        Object stream = body.get("stream");
        if (stream != null && !(stream instanceof Boolean)) {
            return "stream must be true or false, got " + quoted(stream);
        }
        Object options = body.get("stream_options");
        if (options != null) {
            if (!(options instanceof Map<?, ?>)) {
                return "stream_options must be an object, got " + quoted(options);
            }
            if (!Boolean.TRUE.equals(stream)) {
                return "stream_options is only for \"stream\": true";
            }
        }
        Object kv = body.get("kv_transfer_params");
        if (kv != null && !(kv instanceof Map<?, ?>)) {
            return "kv_transfer_params must be an object (the proxy sets its own), got " + quoted(kv);
        }
        return null;
    }

    /** A completion's prompt: a non-blank string, a non-empty list of token ids, or one of those in a list of one. */
    private static String prompt(Object prompt) {
        if (prompt == null) {
            return "prompt is required";
        }
        if (prompt instanceof String s) {
            return s.isBlank() ? "prompt must have at least one token (it is empty)" : null;
        }
        if (!(prompt instanceof List<?> l)) {
            return "prompt must be a string or a list of token ids, got " + quoted(prompt);
        }
        if (l.isEmpty()) {
            return "prompt must have at least one token (the list is empty)";
        }
        if (l.get(0) instanceof Long) {
            return l.stream().allMatch(x -> x instanceof Long t && t >= 0) ? null
                    : "prompt token ids must be non-negative integers";
        }
        if (l.size() != 1) {
            return "batched prompts (" + l.size() + " prompts) are not supported: send one request per prompt";
        }
        return prompt(l.get(0));
    }

    /** A chat's messages: a non-empty list of objects, each with a string role. */
    private static String messages(Object messages) {
        if (!(messages instanceof List<?> msgs) || msgs.isEmpty()) {
            return "messages must be a non-empty list";
        }
        for (Object m : msgs) {
            if (!(m instanceof Map<?, ?> mm)) {
                return "each message must be an object, got " + quoted(m);
            }
            if (!(mm.get("role") instanceof String)) {
                return "each message must have a role (a string)";
            }
        }
        return null;
    }

    private static boolean hasMarker(String s) {
        return s != null && (s.contains(PREFILL_MARKER) || s.contains(DECODE_MARKER));
    }

    /**
     * The prefill's handoff problem, or null: {@code kv_transfer_params} present, the minted
     * transfer id echoed, and the fields typed as the decode's connector reads them; in READ
     * also {@code remote_engine_id} and {@code remote_block_ids} present (the decode reads from
     * them).
     */
    static String handoff(Object returned, String transferId, TransferMode mode) {
        if (!(returned instanceof Map<?, ?> p)) {
            return returned == null
                    ? "the prefill returned no kv_transfer_params (did it stop before its one-token cap?)"
                    : "kv_transfer_params is not an object";
        }
        Object tid = p.get("transfer_id");
        if (!transferId.equals(tid)) {
            return "the prefill's transfer_id " + quoted(tid) + " is not the one sent (" + transferId + ")";
        }
        Object engine = p.get("remote_engine_id");
        if (engine != null && !(engine instanceof String s && !s.isEmpty())) {
            return "remote_engine_id must be a non-empty string, got " + quoted(engine);
        }
        Object host = p.get("remote_host");
        if (host != null && !(host instanceof String s && !s.isEmpty())) {
            return "remote_host must be a non-empty string, got " + quoted(host);
        }
        for (String k : List.of("remote_handshake_port", "remote_notify_port")) {
            Object v = p.get(k);
            if (v != null && !(v instanceof Long l && l > 0 && l <= 65535)) {
                return k + " must be a port (1..65535), got " + quoted(v);
            }
        }
        for (String k : List.of("remote_dp_rank", "remote_dp_size", "remote_dp_size_local", "tp_size")) {
            Object v = p.get(k);
            if (v != null && !(v instanceof Long l && l >= 0)) {
                return k + " must be a non-negative integer, got " + quoted(v);
            }
        }
        Object blocks = p.get("remote_block_ids");
        if (blocks != null && !blockIds(blocks)) {
            return "remote_block_ids must be a list of ints or a list of int lists, got " + quoted(blocks);
        }
        if (mode == TransferMode.READ) {
            if (engine == null) {
                return "READ needs remote_engine_id in the prefill's handoff";
            }
            if (blocks == null) {
                return "READ needs remote_block_ids in the prefill's handoff";
            }
        }
        return null;
    }

    private static boolean blockIds(Object o) {
        if (!(o instanceof List<?> l)) {
            return false;
        }
        boolean flat = l.stream().allMatch(x -> x instanceof Long n && n >= 0);
        boolean groups = l.stream().allMatch(x -> x instanceof List<?> g
                && g.stream().allMatch(y -> y instanceof Long n && n >= 0));
        return flat || groups;
    }

    private static String quoted(Object o) {
        String s = o instanceof String str ? "'" + str + "'" : String.valueOf(o);
        return s.length() > 80 ? s.substring(0, 77) + "..." : s;
    }
}
