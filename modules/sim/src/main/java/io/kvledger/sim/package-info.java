/**
 * A deterministic simulator of a disaggregated (prefill/decode) cluster running the MoRIIO
 * connector's control plane: it drives one {@code io.kvledger.core.node} reducer per engine rank
 * with the hook calls vLLM's scheduler and model runner would make, feeds each node the frames,
 * handshake answers and transfer completions its peers' effects cause, and injects faults
 * (dropped, duplicated, delayed and reordered notifies, notifies that never leave their sender;
 * failed, stalled and "SQ full" transfers; failed handshakes; aborted requests; a decode told
 * the wrong prefill DP rank; n = 2 prefill children sharing a transfer id). Prefill and decode
 * instances may run at different TP sizes ({@code SimOptions.prefillTp/decodeTp}): each TP rank is
 * a node with its own reducer, listeners and journal ({@code P0}, {@code P0-tp1}, ...); TP rank 0's
 * engine hands every hook call to the other ranks, sends the scheduler's notifies alone, and
 * aggregates their {@code get_finished} as vLLM's {@code KVOutputAggregator} does. A prefill
 * instance may run DP ranks ({@code SimOptions.prefillDp}): each is an engine of its own
 * ({@code P0-dp1}, ...) on the instance's host, ports {@code base + dp_rank + tp_rank} (so DP above
 * 1 is meant with TP 1: with both above 1 those listener ports collide, class 23, and the options
 * refuse it), and the proxy routes to the ranks in its flat interleaved order; a decode instance
 * likewise ({@code SimOptions.decodeDp}, {@code D0-dp1}, ...). A multi-pod WRITE deployment
 * ({@code SimOptions.multiPod}) gives each prefill leg its decode's pod hosts, as the Wide-EP sidecar
 * does (each decode instance a pod on its own host); in READ it puts each prefill DP rank on a pod
 * host of its own and gives the decode legs that layout, and under the newest profile the decode's
 * eager handshake join waits without a deadline ({@code SimOptions.unboundedEagerHandshake}): the
 * handshake for rank 1, dialled on the single {@code remote_host}, stops its engine (class 37). A READ decode may wait for its reads without
 * a deadline ({@code SimOptions.unboundedReadWait}, the WideEP reader of #45749): a read that never
 * completes then stops its engine in that step (class 33). Simplification: only TP rank 0's
 * handshakes and reads block its engine's step.
 *
 * <p>Entry point: {@link io.kvledger.sim.Simulation#run(SimOptions, Recorder)}. A run is a pure
 * function of its {@link io.kvledger.sim.SimOptions} (the seed included): one thread, a virtual
 * clock, an agenda ordered by (time, insertion sequence), {@link java.util.SplittableRandom}
 * streams split off the seed, and only insertion-ordered or sorted collections. The
 * {@link io.kvledger.sim.Recorder} sees every (event, effects) pair as it is applied, so a journal
 * can persist a run; {@link io.kvledger.sim.SimulationResult} summarises it (phase counts,
 * anomalies with their node and request, hung requests, frame and transfer counters, state
 * hashes). An engine drops a request once it is done and keeps only its counts, so the requests a
 * long run holds are bounded by the work in flight (the anomalies it records are all kept).
 *
 * <p>The pieces: {@code Simulation} (agenda, run loop, the proxy's dispatch), {@code ToyRouter}
 * (instance choice, ids and {@code kv_transfer_params} as vLLM's toy proxy makes them; the live
 * cluster's router uses it too), {@code EngineModel} (a toy
 * engine with a block pool, chunked prefill and decode, that calls the connector's hooks; no
 * clock, no threads: the live node's {@code SimulatedEngine} drives the same model on a thread),
 * {@code KvOutputAggregator} (vLLM's TP {@code get_finished} aggregation, also the live
 * engine's), {@code TpHandshakeVote} (the engine core's side of the eager handshake's TP-wide
 * vote, which the live engine forwards to its ranks), {@code SimNode} (the model on the agenda, around one reducer), {@code Network}
 * (notify routing by host:port, handshakes, the data plane, faults), {@code SimCommandLine}
 * ({@code kvledger simulate}'s options checked into {@code SimOptions}, and its rerun line).
 *
 * <p>Depends on {@code io.kvledger.core} and the JDK only.
 */
package io.kvledger.sim;
