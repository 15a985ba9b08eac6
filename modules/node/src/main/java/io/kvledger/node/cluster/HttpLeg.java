package io.kvledger.node.cluster;

import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.json.Json;
import io.kvledger.node.engine.Completion;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A leg served by a node of another process, through its {@code POST /v1/completions}. Transport
 * failures and error responses come back as a {@link Completion} with an error, never as an
 * exceptional future. With DP > 1 the leg is one DP rank of an instance ({@code base} is that
 * rank's HTTP server, as vLLM's API server hands the request to the rank the header names) and
 * sends {@code X-data-parallel-rank} as the toy proxy does.
 */
public record HttpLeg(String name, ZmqAddress zmqAddress, int dpSize, int tpSize, int dpRank, URI base, HttpClient client,
                      Duration timeout) implements Leg {

    /** A leg to an instance with one DP rank (or no rank pinning). */
    public HttpLeg(String name, ZmqAddress zmqAddress, int dpSize, int tpSize, URI base, HttpClient client,
                   Duration timeout) {
        this(name, zmqAddress, dpSize, tpSize, 0, base, client, timeout);
    }

    @Override
    public CompletableFuture<Completion> submit(String xRequestId, int promptTokens, int maxTokens, KvParams params) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("prompt_tokens", promptTokens);
        body.put("max_tokens", maxTokens);
        body.put("kv_transfer_params", params == null ? null : params.asMap());
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .header("X-Request-Id", xRequestId);
        if (dpSize > 1) {
            b.header("X-data-parallel-rank", Integer.toString(dpRank));
        }
        HttpRequest req = b.POST(HttpRequest.BodyPublishers.ofString(Json.write(body))).build();
        return client.sendAsync(req, HttpResponse.BodyHandlers.ofString())
                .handle((res, err) -> err != null
                        ? failed(xRequestId, promptTokens, name + " did not answer: " + err)
                        : parse(xRequestId, promptTokens, res.statusCode(), res.body()));
    }

    private static Completion failed(String id, int prompt, String why) {
        return new Completion(id, FinishStatus.FINISHED_ERROR, prompt, 0, null, 0, null, false, why);
    }

    @SuppressWarnings("unchecked")
    private Completion parse(String id, int prompt, int status, String text) {
        Map<String, Object> m;
        try {
            m = (Map<String, Object>) Json.parse(text);
        } catch (RuntimeException e) {
            return failed(id, prompt, name + " answered " + status + " with a body that is not JSON");
        }
        if (status != 200) {
            Object kv = m.get("kvledger") instanceof Map<?, ?> k ? k.get("error") : m.get("error");
            if (kv instanceof Map<?, ?> e && e.containsKey("message")) {
                kv = e.get("message"); // {"error": {"message", "type", "param", "code"}}
            }
            return failed(id, prompt, name + " answered " + status + ": " + kv);
        }
        Map<String, Object> usage = m.get("usage") instanceof Map<?, ?> u ? (Map<String, Object>) u : Map.of();
        Map<String, Object> kl = m.get("kvledger") instanceof Map<?, ?> k ? (Map<String, Object>) k : Map.of();
        String finish = m.get("choices") instanceof java.util.List<?> l && !l.isEmpty() && l.get(0) instanceof Map<?, ?> c
                ? String.valueOf(c.get("finish_reason")) : "error";
        FinishStatus fs = switch (finish) {
            case "stop" -> FinishStatus.FINISHED_STOPPED;
            case "length" -> FinishStatus.FINISHED_LENGTH_CAPPED;
            case "abort" -> FinishStatus.FINISHED_ABORTED;
            default -> FinishStatus.FINISHED_ERROR;
        };
        Map<String, Object> params = m.get("kv_transfer_params") instanceof Map<?, ?> p ? (Map<String, Object>) p : null;
        return new Completion(String.valueOf(kl.getOrDefault("request_id", id)), fs, prompt,
                usage.get("completion_tokens") instanceof Long n ? n.intValue() : 0, params,
                kl.get("verified_bytes") instanceof Long v ? v : 0, null,
                Boolean.TRUE.equals(kl.get("load_failed")), (String) kl.get("error"));
    }
}
