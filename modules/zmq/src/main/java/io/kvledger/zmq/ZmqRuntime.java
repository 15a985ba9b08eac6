package io.kvledger.zmq;

import java.util.concurrent.atomic.AtomicInteger;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

/** JeroMQ plumbing shared by the adapters: contexts with named daemon threads, socket options, errors. */
final class ZmqRuntime {

    private static final AtomicInteger CONTEXTS = new AtomicInteger();
    private static final System.Logger LOG = System.getLogger(ZmqRuntime.class.getName());

    private ZmqRuntime() {}

    /** A context with one I/O thread, its threads named {@code kvledger-zmq-<owner>-<n>-<jeromq name>}. */
    static ZMQ.Context context(String owner) {
        return context(owner, false);
    }

    /**
     * As {@link #context(String)}; {@code batch}: its threads run under Linux's {@code SCHED_BATCH}
     * (where the JVM may call {@code sched_setscheduler}), so that waking its I/O thread does not
     * preempt the waker. JeroMQ 0.6.0's mailbox writes a command's signal byte and then counts it,
     * and reads it only once counted: a waker preempted between the two left the I/O thread's
     * level-triggered selector returning at once, spinning until the waker ran again (a call's
     * 3-4 ms tail over the engine bridge's tcp ROUTER).
     */
    static ZMQ.Context context(String owner, boolean batch) {
        ZMQ.Context ctx = ZMQ.context(1);
        String prefix = "kvledger-zmq-" + owner + "-" + CONTEXTS.incrementAndGet() + "-";
        ctx.setThreadFactor((r, name) -> {
            Runnable body = !batch ? r : () -> {
                batchScheduled();
                r.run();
            };
            Thread t = new Thread(body, prefix + name);
            t.setDaemon(true);
            return t;
        });
        // JeroMQ prints these to stderr by default; route them to the log instead
        ctx.setUncaughtExceptionHandler((t, e) -> LOG.log(System.Logger.Level.WARNING, "JeroMQ thread " + t.getName() + ": " + describe(e), e));
        ctx.setNotificationExceptionHandler((t, e) -> LOG.log(System.Logger.Level.DEBUG, "JeroMQ thread " + t.getName() + ": " + describe(e), e));
        return ctx;
    }

    /**
     * Waits, without giving up on interrupts, until {@code owner}'s tasks have closed their
     * sockets, then terminates {@code ctx} (terminating first would leave JeroMQ threads behind);
     * the caller's interrupt status is restored afterwards.
     */
    static void awaitThenTerminate(java.util.concurrent.ExecutorService owner, ZMQ.Context ctx) {
        boolean interrupted = false;
        while (true) {
            try {
                if (owner.awaitTermination(1, java.util.concurrent.TimeUnit.SECONDS)) {
                    break;
                }
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        ctx.term();
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * An adapter's {@code closeAsync}: runs {@code close} on a short-lived thread named
     * {@code threadName} unless a close already started, and returns the future that {@code close}
     * completes. Never blocks the caller.
     */
    static java.util.concurrent.CompletableFuture<Void> closeAsync(java.util.concurrent.atomic.AtomicBoolean closeStarted,
            java.util.concurrent.CompletableFuture<Void> closed, String threadName, Runnable close) {
        if (!closeStarted.get()) {
            thread(threadName, close).start();
        }
        return closed;
    }

    static Thread thread(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        return t;
    }

    /**
     * A notify DEALER as the newest peers configure it (protocol spec 2.2, E-ack): TCP keepalive
     * on with idle 30 s, interval 10 s, 3 probes; no send high-water mark; linger 0.
     */
    static ZMQ.Socket notifyDealer(ZMQ.Context ctx, boolean ipv6) {
        ZMQ.Socket s = ctx.socket(SocketType.DEALER);
        s.setTCPKeepAlive(1);
        s.setTCPKeepAliveIdle(30);
        s.setTCPKeepAliveInterval(10);
        s.setTCPKeepAliveCount(3);
        s.setSndHWM(0);
        s.setLinger(0);
        s.setIPv6(ipv6);
        return s;
    }

    private static final int SCHED_BATCH = 3;

    /**
     * Puts the calling thread under {@code SCHED_BATCH} (Linux; nice value unchanged); false where
     * that is not possible (another OS, no native access), and the thread runs as before.
     */
    static boolean batchScheduled() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return false;
        }
        try {
            java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
            java.util.Optional<java.lang.foreign.MemorySegment> f = linker.defaultLookup().find("sched_setscheduler");
            if (f.isEmpty()) {
                return false;
            }
            java.lang.invoke.MethodHandle h = linker.downcallHandle(f.get(), java.lang.foreign.FunctionDescriptor.of(
                    java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.JAVA_INT,
                    java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS));
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                // struct sched_param { int sched_priority; }: 0, as SCHED_BATCH asks; pid 0: this thread
                java.lang.foreign.MemorySegment param = arena.allocate(java.lang.foreign.ValueLayout.JAVA_INT);
                return (int) h.invokeExact(0, SCHED_BATCH, param) == 0;
            }
        } catch (Throwable e) {
            LOG.log(System.Logger.Level.DEBUG, "SCHED_BATCH not set: " + describe(e), e);
            return false;
        }
    }

    static boolean isTerm(Throwable t) {
        return t instanceof ZMQException z && z.getErrorCode() == ZMQ.Error.ETERM.getCode();
    }

    /** Whether {@code endpoint}'s host part is an IPv6 literal ({@code tcp://[::1]:5}). */
    static boolean ipv6(String endpoint) {
        return endpoint.contains("[");
    }

    static void closeQuietly(ZMQ.Socket s) {
        if (s == null) {
            return;
        }
        try {
            s.setLinger(0);
        } catch (RuntimeException ignored) {
            // the context is already terminating; close below still releases the socket
        }
        try {
            s.close();
        } catch (RuntimeException ignored) {
            // closing a socket of a terminated context: nothing left to release
        }
    }

    /**
     * Why a bind failed, in words: "address already in use" for a port another process holds
     * (JeroMQ says "Errno 48", its own number for EADDRINUSE), else {@link #describe}.
     */
    static String bindFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if ((c instanceof org.zeromq.ZMQException z && z.getErrorCode() == zmq.ZError.EADDRINUSE)
                    || c instanceof java.net.BindException) {
                return "address already in use";
            }
        }
        return describe(t);
    }

    static String describe(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /** The port of a bound {@code tcp://host:port} endpoint. */
    static int portOf(String endpoint) {
        return Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
    }

    /**
     * Starts the thread that owns a socket and waits until the socket is bound; then names the
     * thread {@code namePrefix} and the bound port (or, for a Unix socket, unix:// or ipc://, its file's name). On failure {@code closeOnFailure} runs and
     * the exception says {@code cannot bind WHAT at WHERE: why}.
     *
     * @param bound completed by the thread with the bound endpoint
     * @return the bound endpoint
     */
    static String startBound(Thread thread, java.util.concurrent.CompletableFuture<String> bound,
                             Runnable closeOnFailure, String what, Object where, String namePrefix) {
        thread.start();
        String endpoint;
        try {
            endpoint = bound.join();
        } catch (RuntimeException e) {
            closeOnFailure.run();
            throw new IllegalStateException("cannot bind " + what + " at " + where + ": "
                    + bindFailure(e.getCause() == null ? e : e.getCause()), e);
        }
        int scheme = endpoint.startsWith("unix://") ? "unix://".length() : endpoint.startsWith("ipc://") ? "ipc://".length() : 0;
        thread.setName(namePrefix + (scheme > 0
                ? java.nio.file.Path.of(endpoint.substring(scheme)).getFileName() : String.valueOf(portOf(endpoint))));
        return endpoint;
    }
}
