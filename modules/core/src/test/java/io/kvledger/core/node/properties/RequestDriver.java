package io.kvledger.core.node.properties;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongFunction;
import java.util.function.Predicate;

/**
 * What the lifecycle drivers share of playing vLLM's schedulers and the wire for a set of P/D
 * requests: each request's prefill and decode stages and the hook that moves it on, the producer
 * step's prefill chunks, and the interleaving of engine steps, hooks and deliveries chosen by a
 * list of choice numbers (when it runs out: hooks and deliveries first, in order, then the engine
 * steps in turn). {@link LifecycleHarness} drives one producer and one consumer node; the ledger's
 * cluster harness drives every (DP, TP) rank of a deployment. A subclass says where a hook goes
 * (which node or nodes), what the legs' kv_transfer_params are, how an engine step goes and what
 * the wire delivers.
 *
 * @param <P> a request's plan
 * @param <W> something the wire will hand to a node
 */
public abstract class RequestDriver<P extends RequestDriver.Sized, W> {

    /** What every request plan tells: its prompt length and its prefill chunks (WRITE). */
    public interface Sized {
        int promptTokens();

        int chunks();
    }

    public enum PStage { NEW, ADMITTED, MATCHED, ALLOCATED, PREFILLED, FINISHED }

    public enum DStage { NEW, ADMITTED, MATCHED, ALLOCATED, FINISHED }

    /** One request as the driver moves it. */
    public static final class Req<P extends Sized> {
        public final int index;
        public final String rid;
        public final String tid;
        public final P plan;
        /** Whether it has a decode leg at all (a request P finishes stopped has none). */
        public final boolean needsConsumer;
        public PStage p = PStage.NEW;
        public DStage d = DStage.NEW;
        public int chunksDelivered;
        public boolean firstStepDone;
        public KvParams producerResponse;
        public int matched;

        Req(int index, P plan, boolean needsConsumer) {
            this.index = index;
            this.plan = plan;
            this.needsConsumer = needsConsumer;
            this.rid = ReducerFixtures.proxyId(ReducerFixtures.hex32(index + 1));
            this.tid = "tx-" + index;
        }

        public boolean done() {
            return p == PStage.FINISHED && (!needsConsumer || d == DStage.FINISHED);
        }
    }

    public static final long STEP_NS = 1_000_000L;

    protected final List<Req<P>> reqs = new ArrayList<>();
    protected final List<W> wire = new ArrayList<>();
    private final List<Integer> choices;
    private int choice;
    protected long now;

    protected RequestDriver(List<P> requests, List<Integer> choices, Predicate<P> needsConsumer) {
        this.choices = choices;
        for (int i = 0; i < requests.size(); i++) {
            reqs.add(new Req<>(i, requests.get(i), needsConsumer.test(requests.get(i))));
        }
    }

    // ---------------------------------------------------------- what a driver says

    /** One engine step per schedulable unit (node or DP rank), in a fixed order. */
    protected abstract List<Runnable> steps();

    protected abstract void deliver(W w);

    /** Where every request stands, for a stuck run's message. */
    protected abstract String status();

    protected abstract TransferMode mode();

    /** Applies a scheduler hook of request {@code r} on its producer or consumer side. */
    protected abstract void hook(Req<P> r, boolean producer, LongFunction<NodeEvent> event);

    /** The producer's group-0 blocks of {@code r}, over its whole prompt. */
    protected abstract int[] producerBlocks(Req<P> r);

    /** What the producer allocates with the request's first chunk of group-0 blocks. */
    protected abstract BlockGroups producerAllocation(Req<P> r, int[] firstChunk);

    /** The producer's RequestFinished of a prefilled request. */
    protected abstract NodeEvent producerFinish(Req<P> r, long at);

    protected abstract BlockGroups consumerBlocks(Req<P> r);

    protected abstract KvParams prefillLeg(Req<P> r);

    protected abstract KvParams decodeLeg(Req<P> r);

    /** Whether the decode side of {@code r} has reached {@code ready} (everywhere it runs). */
    protected abstract boolean decodeReached(Req<P> r, RequestPhase ready);

    /** Whether the decode leg of {@code r} is aborted before its blocks are allocated. */
    protected boolean abortsDecode(Req<P> r) {
        return false;
    }

    // ---------------------------------------------------------- the interleaving

    /**
     * Runs actions until every request is done and the wire is empty: the plan's choices pick
     * among the enabled ones while they last. Returns why it gave up, or null.
     */
    protected final String interleave(int maxActions) {
        int actions = 0;
        while (!(allDone() && wire.isEmpty())) {
            if (++actions > maxActions) {
                return "no progress after " + maxActions + " actions: " + status();
            }
            List<Runnable> enabled = new ArrayList<>(steps());
            int steps = enabled.size();
            for (Req<P> r : reqs) {
                Runnable a = producerAction(r);
                if (a != null) {
                    enabled.add(a);
                }
                Runnable b = consumerAction(r);
                if (b != null) {
                    enabled.add(b);
                }
            }
            for (W w : List.copyOf(wire)) {
                enabled.add(() -> deliver(w));
            }
            int pick;
            if (choice < choices.size()) {
                pick = Math.floorMod(choices.get(choice++), enabled.size());
            } else if (enabled.size() > steps) {
                pick = steps; // drain: hooks and deliveries first, in order
            } else {
                pick = actions % steps; // then the engine steps in turn
            }
            enabled.get(pick).run();
        }
        return null;
    }

    protected final boolean allDone() {
        for (Req<P> r : reqs) {
            if (!r.done()) {
                return false;
            }
        }
        return true;
    }

    protected final long tick() {
        now += STEP_NS;
        return now;
    }

    protected final List<String> requestIds() {
        List<String> ids = new ArrayList<>();
        for (Req<P> r : reqs) {
            ids.add(r.rid);
        }
        return ids;
    }

    /**
     * Notes the producer's finish decision on its request: the kv_transfer_params the proxy
     * forwards to the decode leg (READ). A request renamed at finish is decided under its admitted
     * id and a suffix.
     */
    protected final void noteDecision(Effect.FinishDecision fd) {
        for (Req<P> r : reqs) {
            if (fd.requestId() != null && fd.requestId().startsWith(r.rid)) {
                r.producerResponse = fd.params();
            }
        }
    }

    /** Notes the consumer's matched tokens on its request (what its allocation then says). */
    protected final void noteMatched(Effect.MatchedTokens mt) {
        for (Req<P> r : reqs) {
            if (r.rid.equals(mt.requestId())) {
                r.matched = mt.count();
            }
        }
    }

    // ---------------------------------------------------------- blocks and chunks

    protected static int blocksFor(int tokens) {
        return (tokens + 15) / 16;
    }

    /** {@code count} block ids from {@code first} on. */
    protected static int[] blockIds(int first, int count) {
        int[] ids = new int[count];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = first + i;
        }
        return ids;
    }

    protected final int[] chunk(Req<P> r, int k) {
        int[] all = producerBlocks(r);
        int n = r.plan.chunks();
        return Arrays.copyOfRange(all, all.length * k / n, all.length * (k + 1) / n);
    }

    /**
     * A producer engine step's prefill: each allocated request {@code here} computes its next
     * chunk (the first step the chunk allocated with it), the later chunks going into
     * {@code cached}. Returns the requests whose last chunk this step computes; the caller marks
     * them prefilled once the step is applied.
     */
    protected final List<Req<P>> prefillChunks(Predicate<Req<P>> here, List<NodeEvent.CachedRequest> cached) {
        List<Req<P>> prefilled = new ArrayList<>();
        for (Req<P> r : reqs) {
            if (r.p != PStage.ALLOCATED || !here.test(r)) {
                continue;
            }
            if (!r.firstStepDone) {
                r.firstStepDone = true;
            } else if (r.chunksDelivered < r.plan.chunks()) {
                cached.add(new NodeEvent.CachedRequest(r.rid, BlockGroups.of(chunk(r, r.chunksDelivered))));
                r.chunksDelivered++;
            }
            if (r.chunksDelivered == r.plan.chunks()) {
                prefilled.add(r);
            }
        }
        return prefilled;
    }

    // ---------------------------------------------------------- request hooks

    private Runnable producerAction(Req<P> r) {
        switch (r.p) {
            case NEW -> {
                return () -> {
                    KvParams leg = prefillLeg(r);
                    hook(r, true, at -> new NodeEvent.RequestAdmitted(at, r.rid, r.plan.promptTokens(), r.plan.promptTokens(), leg));
                    r.p = PStage.ADMITTED;
                };
            }
            case ADMITTED -> {
                return () -> {
                    hook(r, true, at -> new NodeEvent.MatchedTokensQueried(at, r.rid, 0));
                    r.p = PStage.MATCHED;
                };
            }
            case MATCHED -> {
                return () -> {
                    r.chunksDelivered = 1;
                    BlockGroups blocks = producerAllocation(r, chunk(r, 0));
                    hook(r, true, at -> new NodeEvent.BlocksAllocated(at, r.rid, blocks, 0));
                    r.p = PStage.ALLOCATED;
                };
            }
            case PREFILLED -> {
                return () -> {
                    hook(r, true, at -> producerFinish(r, at));
                    r.p = PStage.FINISHED;
                };
            }
            default -> { }
        }
        return null;
    }

    private Runnable consumerAction(Req<P> r) {
        if (!r.needsConsumer) {
            return null;
        }
        boolean mayStart = mode() == TransferMode.WRITE || r.p == PStage.FINISHED;
        switch (r.d) {
            case NEW -> {
                if (mayStart) {
                    return () -> {
                        KvParams leg = decodeLeg(r);
                        hook(r, false, at -> new NodeEvent.RequestAdmitted(at, r.rid, r.plan.promptTokens(), r.plan.promptTokens(), leg));
                        r.d = DStage.ADMITTED;
                    };
                }
            }
            case ADMITTED -> {
                if (abortsDecode(r)) {
                    return () -> {
                        hook(r, false, at -> new NodeEvent.RequestFinished(at, r.rid, FinishStatus.FINISHED_ABORTED,
                                BlockGroups.of(new int[0])));
                        r.d = DStage.FINISHED;
                    };
                }
                return () -> {
                    hook(r, false, at -> new NodeEvent.MatchedTokensQueried(at, r.rid, 0));
                    r.d = DStage.MATCHED;
                };
            }
            case MATCHED -> {
                return () -> {
                    BlockGroups blocks = consumerBlocks(r);
                    hook(r, false, at -> new NodeEvent.BlocksAllocated(at, r.rid, blocks, Math.max(r.matched, 0)));
                    r.d = DStage.ALLOCATED;
                };
            }
            case ALLOCATED -> {
                RequestPhase ready = mode() == TransferMode.READ ? RequestPhase.RUNNING : RequestPhase.KV_RECEIVED;
                if (decodeReached(r, ready)) {
                    return () -> {
                        BlockGroups blocks = consumerBlocks(r);
                        hook(r, false, at -> new NodeEvent.RequestFinished(at, r.rid, FinishStatus.FINISHED_STOPPED,
                                blocks));
                        r.d = DStage.FINISHED;
                    };
                }
            }
            default -> { }
        }
        return null;
    }
}
