package io.kvledger.rdma.testing;

import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEvent;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Bounded waits for tests: a test that would hang fails instead, naming what it waited for. */
public final class Await {

    private Await() {}

    public static TransferEvent event(Result<PendingTransfer> posted, Duration within) {
        PendingTransfer p = posted.orElseThrow();
        try {
            return p.future().get(within.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("no completion for transfer " + p.transferId() + " within " + within, e);
        }
    }

    public static void until(BooleanSupplier condition, Duration within, String what) {
        long deadline = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not " + what + " within " + within);
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    public static void open(Session s, Duration within) {
        until(() -> s.state() != Session.State.CONNECTING, within, "connected");
    }
}
