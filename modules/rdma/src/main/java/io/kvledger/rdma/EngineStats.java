package io.kvledger.rdma;

/**
 * A snapshot of an engine's resources and counters, for tests (no leaked endpoint) and logs.
 *
 * @param regions   registered regions not yet released
 * @param sessions  open or connecting sessions
 * @param endpoints transport endpoints not yet closed (UCX {@code ucp_ep_h}; peers for the in-JVM engine)
 * @param inFlight  accepted batches without a completion yet
 * @param posted    accepted batches
 * @param succeeded successful completions
 * @param failed    failure completions
 * @param rejected  batches refused before posting
 */
public record EngineStats(int regions, int sessions, int endpoints, int inFlight, long posted, long succeeded,
                          long failed, long rejected) {}
