package io.kvledger.ledger.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.Samples;
import io.kvledger.journal.format.Payloads;
import io.kvledger.journal.proxy.ProxyEvent;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A proxy's journal on disk: its header, its records read back, and what replay and the ledger make of it. */
class ProxyJournalFormatTest {

    @TempDir
    Path tmp;

    @Test
    void a_proxy_journal_reads_back_every_record_under_a_proxy_header() {
        Path dir = tmp.resolve("proxy");
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.proxy("px", TransferMode.READ, "test"))) {
            Samples.proxyEvents().forEach(w::appendProxy);
        }
        List<ProxyEvent> back = new ArrayList<>();
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.header().proxy()).isTrue();
            assertThat(r.header().describe()).isEqualTo("px proxy READ format=2 origin=\"test\"");
            assertThat(r.header().toMap().get("kv_role")).isEqualTo("proxy");
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Proxy px) {
                    back.add(px.event());
                    assertThat(JsonLines.toJson(e)).contains("\"kind\":\"proxy\"");
                }
            }
        }
        List<ProxyEvent> sent = Samples.proxyEvents();
        assertThat(back).hasSameSizeAs(sent);
        for (int i = 0; i < sent.size(); i++) {
            assertThat(Payloads.same(sent.get(i), back.get(i))).as("%s", sent.get(i)).isTrue();
        }
        // reopened for appending: the same proxy, the sequence continues
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.proxy("px", TransferMode.READ, "again"))) {
            assertThat(w.appending()).isTrue();
            assertThat(w.nextSeq()).isEqualTo(sent.size() + 1);
        }
    }

    @Test
    void a_node_journal_takes_no_proxy_record_and_replay_leaves_proxy_journals_out() {
        Path node = tmp.resolve("D0");
        try (JournalWriter w = JournalWriter.open(node, Samples.header())) {
            w.appendInput(Samples.events().getFirst());
            assertThatThrownBy(() -> w.appendProxy(Samples.proxyEvents().getFirst()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("proxy records go to a proxy's journal");
        }
        Path proxy = tmp.resolve("proxy");
        try (JournalWriter w = JournalWriter.open(proxy, JournalHeader.proxy("px", TransferMode.READ, "test"))) {
            Samples.proxyEvents().forEach(w::appendProxy);
        }
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(tmp)), ConfigOverrides.none())) {
            assertThat(r.nodes()).extracting(Replayer.Node::name).containsExactly("P1");
            assertThat(r.proxyJournals()).extracting(JournalInputs.NodeJournal::name).containsExactly("proxy");
        }
        ProxyLedger l = ProxyLedger.read(List.of(JournalInputs.resolve(List.of(proxy)).getFirst()));
        assertThat(l.requests()).hasSize(1);
        ProxyLedger.Request q = l.requests().getFirst();
        assertThat(q.legs().get("prefill").outcome()).isEqualTo("answered");
        assertThat(q.legs()).doesNotContainKey("decode"); // the samples never send it
        assertThat(q.clientStatus()).isEqualTo(499);
    }
}
