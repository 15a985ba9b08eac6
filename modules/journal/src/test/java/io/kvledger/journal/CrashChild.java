package io.kvledger.journal;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import java.nio.file.Path;
import java.util.List;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;

/**
 * The child JVM of {@link CrashSafetyTest}: appends to a journal until it is killed.
 *
 * <p>{@code loop DIR}: appends inputs with derived effects of varying sizes forever, printing
 * {@code ready} after the first thousand. {@code groups DIR}: the same in group excerpts of 1 to 40
 * inputs, printing {@code ready} after 200 groups. {@code stall DIR N}: appends N inputs, then opens one
 * more excerpt, writes half of an entry into it, prints {@code mid-append} and waits, so the kill
 * is certain to land inside an append.
 */
public final class CrashChild {

    private CrashChild() {}

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[1]);
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            List<NodeEvent> events = Samples.events();
            List<Effect> effects = Samples.effects();
            if (args[0].equals("groups")) {
                // as the node loop's journaller: groups of 1 to 40 inputs, each with its derived entries
                long at = 0;
                for (long i = 0; ; i++) {
                    w.beginGroup();
                    for (int k = 0; k <= i % 40; k++) {
                        at += 1_000;
                        NodeEvent e = k % 3 == 0 ? new NodeEvent.Tick(at) : events.get((int) ((i + k) % events.size()));
                        long seq = w.appendInput(e);
                        for (Effect d : effects.subList(0, (int) ((i + k) % 5))) {
                            w.appendDerived(seq, d);
                        }
                    }
                    w.endGroup();
                    if (i == 200) {
                        System.out.println("ready");
                        System.out.flush();
                    }
                }
            }
            if (args[0].equals("loop")) {
                long at = 0;
                for (long i = 0; ; i++) {
                    NodeEvent e = events.get((int) (i % events.size()));
                    at += 1_000;
                    NodeEvent stamped = new NodeEvent.Tick(at);
                    w.appendApplied(i % 3 == 0 ? stamped : e, effects.subList(0, (int) (i % 5)));
                    if (i == 1_000) {
                        System.out.println("ready");
                        System.out.flush();
                    }
                }
            }
            int n = Integer.parseInt(args[2]);
            for (int i = 0; i < n; i++) {
                w.appendInput(new NodeEvent.Tick(i));
            }
            byte[] envelope = new byte[JournalFormat.ENVELOPE_V2];
            EntryCodec.envelope(envelope, EntryKind.INPUT, EntryType.TICK.id(), w.nextSeq(), n, JournalFormat.NO_CAUSE);
            try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(dir.toFile())
                    .rollCycle(JournalFormat.ROLL_CYCLE).build();
                 ExcerptAppender a = q.createAppender();
                 DocumentContext dc = a.writingDocument()) {
                dc.wire().bytes().write(envelope, 0, 17);
                System.out.println("mid-append");
                System.out.flush();
                Thread.sleep(Long.MAX_VALUE);
            }
        }
    }
}
