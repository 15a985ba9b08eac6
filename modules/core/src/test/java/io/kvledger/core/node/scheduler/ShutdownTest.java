package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code MoRIIOConnectorScheduler.shutdown} (identical in seed and newest): every cached notify
 * socket is closed with linger 0, a close that raises is logged as a warning
 * ("Error closing ZMQ socket for path ..."), and the cache is cleared. Nothing else changes.
 */
class ShutdownTest {

    @Test
    void shutdown_logs_each_socket_close_failure_and_changes_no_request() {
        for (Behaviour b : List.of(Behaviour.newest(), seed())) {
            Node p = new Node(producer(TransferMode.READ).behaviour(b));
            p.admit("r1", 32, params("do_remote_decode", true, "transfer_id", "t1"));
            p.alloc("r1", one(1, 2), 0);
            p.finish("r1", FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));
            List<Effect> fx = p.apply(new NodeEvent.ShutDown(p.now, List.of("tcp://10.0.1.1:62005: Socket closed", "tcp://10.0.1.2:62005: EINTR")));
            List<Effect.Anomaly> a = only(fx, Effect.Anomaly.class);
            assertThat(a).as(b.profile()).extracting(Effect.Anomaly::kind).containsExactly(AnomalyKind.NOTIFY_SOCKET_CLOSE_FAILED,
                    AnomalyKind.NOTIFY_SOCKET_CLOSE_FAILED, AnomalyKind.SHUT_DOWN_WITH_REQUESTS_HELD);
            assertThat(a.get(0).detail()).isEqualTo("tcp://10.0.1.1:62005: Socket closed");
            assertThat(a.get(2).detail()).isEqualTo("1 held: r1 (DEFERRED_FREE)");
            assertThat(fx).as(b.profile()).allMatch(e -> e instanceof Effect.Anomaly);
            assertThat(p.state.phaseOf("r1")).isEqualTo(RequestPhase.DEFERRED_FREE);
            // the scheduler goes on as before: the deferral is still reaped at its deadline
            List<Effect> later = p.at(p.now + p.state.config().deferTimeoutNs()).output(null, null);
            assertThat(single(later, Effect.AckSurfaced.class).reason()).isEqualTo(Effect.SurfaceReason.REAPED);
        }
    }

    @Test
    void a_clean_shutdown_of_an_idle_node_records_nothing() {
        Node d = new Node(consumer(TransferMode.WRITE));
        assertThat(d.apply(new NodeEvent.ShutDown(d.now, List.of()))).isEmpty();
        assertThat(d.apply(new NodeEvent.ShutDown(d.now, null))).isEmpty();
    }
}
