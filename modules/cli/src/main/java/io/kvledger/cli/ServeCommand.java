package io.kvledger.cli;

import io.kvledger.ledger.kafka.KafkaSource;
import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.web.EventStream;
import io.kvledger.ledger.web.WebServer;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger serve DIR... [--http HOST:PORT]}: serves the web timeline page over a set of
 * journals (every node of a deployment, the proxy's, a tap's) until stopped: a searchable list of
 * requests with their findings, and one request's swimlane timeline across every journal.
 */
@Command(name = "serve", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Serves a web page over node journals: the requests (id, node, phase, age, anomalies, hang findings) "
                    + "with filters, and one request's swimlane timeline across the journals (proxy, prefill "
                    + "scheduler and worker, the wire, decode worker and scheduler), with its transfers, deadlines "
                    + "and the event a hang finding says is missing. Click an event to see its journal entry.",
            "DIR is a node journal, a directory holding one journal directory per node, or JSON lines as they are "
                    + "(journal/fixtures, the vLLM bridge recorder's directory, or one .jsonl file). The journals are "
                    + "read again on each page request.",
            "With --follow the page updates live as the journals grow (point it at the journals of running nodes "
                    + "for one live view of the whole deployment).",
            "Runs until interrupted (Ctrl-C). Exit status: 0 stopped; 2 usage error."})
final class ServeCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = Journals.DIRS_HELP)
    List<String> dirs = new ArrayList<>();

    @Option(names = "--http", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:8088",
            description = "where to listen (default: ${DEFAULT-VALUE}; port 0 picks a free one). The page has no "
                    + "token: keep it on loopback or a trusted network.")
    String http;

    @Option(names = "--follow",
            description = "follow the journals as they grow (journals of running nodes): the page updates through "
                    + "the server's event stream (/v1/events) as entries are appended")
    boolean follow;

    /** Counted down when the server is up (tests wait on it). */
    final CountDownLatch started = new CountDownLatch(1);
    volatile WebServer server;

    @Override
    public Integer call() throws InterruptedException {
        HostPort at;
        try {
            at = HostPort.parse("--http", http);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        String host = at.host();
        int port = at.port();
        // a topic followed live: read, then kept growing in its temporary journals as the topic grows
        List<KafkaSource.Live> topics = new ArrayList<>();
        List<NodeJournal> journals = new ArrayList<>();
        if (!follow || dirs.stream().noneMatch(KafkaUri::isKafka)) {
            journals.addAll(Journals.resolve(spec, dirs));
        } else {
            try {
                for (String d : dirs) {
                    if (KafkaUri.isKafka(d)) {
                        KafkaSource.Live live = KafkaTopics.follow(d, spec.commandLine().getErr(), "serve");
                        topics.add(live);
                        journals.addAll(live.result().journals());
                    } else {
                        journals.addAll(Journals.resolve(spec, List.of(d)));
                    }
                }
            } catch (JournalInputs.InputException | ParameterException e) {
                topics.forEach(KafkaSource.Live::close);
                throw e instanceof ParameterException pe ? pe : new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        boolean doubted = Journals.audit(spec, journals);
        // a followed topic's nodes that ship their first entries later join: the API and the event
        // stream look the journals up again on each request
        List<NodeJournal> given = List.copyOf(journals);
        java.util.function.Supplier<List<NodeJournal>> current = () -> {
            if (topics.isEmpty()) {
                return given;
            }
            List<NodeJournal> all = new ArrayList<>();
            for (NodeJournal j : given) {
                if (topics.stream().noneMatch(t -> t.result().journals().contains(j))) {
                    all.add(j);
                }
            }
            topics.forEach(t -> all.addAll(t.journals()));
            return all;
        };
        java.util.Map<java.nio.file.Path, EventStream> streams = new java.util.LinkedHashMap<>();
        java.util.concurrent.atomic.AtomicBoolean closing = new java.util.concurrent.atomic.AtomicBoolean();
        // an open /v1/events connection asks again every second, so a node that appears later joins it;
        // null once closing ends those connections
        java.util.function.Supplier<List<EventStream>> currentStreams = () -> {
            synchronized (streams) {
                if (closing.get()) {
                    return null;
                }
                for (NodeJournal j : current.get()) {
                    streams.computeIfAbsent(j.dir(), d -> new EventStream(d, j.name()));
                }
                return List.copyOf(streams.values());
            }
        };
        if (follow) {
            currentStreams.get();
        }
        WebServer s = start(current, host, port, follow ? currentStreams : null);
        boolean interrupted = false;
        try {
            server = s;
            List<String> names = new ArrayList<>();
            journals.forEach(j -> names.add(j.name()));
            String shown = s.host().contains(":") ? "[" + s.host() + "]" : s.host();
            out.println("serve: http://" + shown + ":" + s.port() + "/ over " + journals.size() + " journal(s) ("
                    + String.join(", ", names) + ")" + (follow ? ", following them" : "") + "; Ctrl-C stops");
            out.flush();
            started.countDown();
            new CountDownLatch(1).await();
        } catch (InterruptedException e) {
            // Stopped. The flag is set again once the streams have ended (closing one waits for its thread).
            interrupted = true;
        } finally {
            // End the event streams first: an open stream would hold the server's graceful shutdown.
            synchronized (streams) {
                closing.set(true);
                streams.values().forEach(EventStream::close);
            }
            s.close();
            topics.forEach(KafkaSource.Live::close);
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return doubted ? 1 : 0;
    }

    private WebServer start(java.util.function.Supplier<List<NodeJournal>> journals, String host, int port,
                            java.util.function.Supplier<List<EventStream>> streams) {
        try {
            return WebServer.start(journals, host, port, r -> {
                if (streams != null) {
                    r.get("/v1/events", (req, res) -> EventStream.serve(streams, java.time.Duration.ofSeconds(1), res));
                }
            });
        } catch (IllegalStateException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }
}
