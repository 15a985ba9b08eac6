package io.kvledger.node.ship;

import io.kvledger.ledger.kafka.KafkaUri;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@link Shipper} of a live process's own journal on a thread of its own ({@code kvledger node
 * --ship}): it reads the journal as any other reader, so the node loop and its journaller never
 * wait for it. {@link #close} ships what the journal holds by then and waits for the
 * acknowledgements, up to a bound; what is left is shipped by the next start (it resumes from the
 * topic).
 */
public final class ShipThread implements AutoCloseable {

    private final Shipper shipper;
    private final Thread thread;
    private volatile boolean stop;
    private volatile int exit = -1;

    private ShipThread(Shipper shipper) {
        this.shipper = shipper;
        this.thread = Thread.ofPlatform().daemon().name("kvledger-ship").unstarted(() -> {
            try {
                exit = shipper.run(() -> stop);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    /**
     * Opens the journal in {@code journal} (its header must be written) for shipping to
     * {@code target}; {@link #begin} starts the thread (the caller hands the shipper's counters to
     * its metrics first).
     *
     * @throws io.kvledger.ledger.replay.JournalInputs.InputException when the journal cannot be read
     */
    public static ShipThread open(KafkaUri target, Path journal, PrintWriter err) {
        return new ShipThread(new Shipper(new Shipper.Options(target, List.of(journal), true, 32L << 20, 8), err));
    }

    /** Starts the shipping thread; returns this. */
    public ShipThread begin() {
        thread.start();
        return this;
    }

    public Shipper shipper() {
        return shipper;
    }

    /** The shipper's exit status once it ended (-1 while it runs). */
    public int exit() {
        return exit;
    }

    /** Ships what the journal holds, waits for it to be acknowledged up to {@code bound}, then stops. */
    public void close(Duration bound) {
        shipper.finish();
        if (thread.getState() == Thread.State.NEW) {
            shipper.close();
            return;
        }
        try {
            thread.join(bound.toMillis());
            if (thread.isAlive()) {
                stop = true;
                thread.join(TimeUnit.SECONDS.toMillis(5));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            shipper.close();
        }
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(10));
    }
}
