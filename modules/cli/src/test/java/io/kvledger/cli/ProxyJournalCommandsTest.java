package io.kvledger.cli;

import static io.kvledger.cli.SimJournals.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.KvParams;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.proxy.ProxyEvent;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code inspect} and {@code hangs} over node journals and a proxy's journal together: the
 * stranded WRITE request of fixture 27 with a proxy journal that routed it, saw its prefill answer
 * and never saw its decode answer.
 */
class ProxyJournalCommandsTest {

    static final String UUID = "6c5d8182190c404694cda0f3b0e27cc7";
    static final String RID = "___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_host:10.0.1.1,"
            + "handshake:6301,notify:61005_" + UUID;
    static final String TID = "tx-75301b59-de1f-4242-9f7d-3b77de8039a0";

    @TempDir
    Path tmp;

    private Path proxyJournal() {
        Path dir = tmp.resolve("proxy");
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.proxy("proxy0", TransferMode.WRITE, "test"))) {
            long t = 20_000_000L;
            w.appendProxy(new ProxyEvent.ProxyStarted(1_000_000L, "127.0.0.1:10001", 36367, "WRITE", 0));
            w.appendProxy(new ProxyEvent.InstanceRegistered(2_000_000L, "P", "10.0.0.1:8100",
                    "host:10.0.0.1,handshake:6301,notify:61005", 1, 1, "WRITE", "new"));
            w.appendProxy(new ProxyEvent.RequestRouted(t, RID, TID, "/v1/completions", false, null, "WRITE",
                    "10.0.0.1:8100", null, "10.0.1.1:8200", null));
            w.appendProxy(new ProxyEvent.LegSent(t + 1000, RID, TID, "prefill", "10.0.0.1:8100",
                    KvParams.of("transfer_id", TID, "do_remote_decode", true)));
            w.appendProxy(new ProxyEvent.LegSent(t + 2000, RID, TID, "decode", "10.0.1.1:8200",
                    KvParams.of("transfer_id", TID, "do_remote_prefill", true)));
            w.appendProxy(new ProxyEvent.LegAnswered(t + 900_000_000L, RID, TID, "prefill", 200, 900_000_000L, "length",
                    KvParams.of("transfer_id", TID, "remote_block_ids", List.of(List.of(1L, 2L)))));
            w.appendProxy(new ProxyEvent.InstanceExpired(37_000_000_000L, "D", "10.1.1.1:8200", 26_000_000_000L));
        }
        return dir;
    }

    private static String fixture() {
        return FixtureGoldenTest.fixturesDir().resolve("27-write-stranded").toString();
    }

    @Test
    void hangs_names_the_request_whose_decode_leg_the_proxy_never_saw_answered() {
        Path proxy = proxyJournal();
        SimJournals.Outcome o = run("hangs", fixture(), proxy.toString(), "--full-ids");
        assertThat(o.code()).as(o.err()).isEqualTo(1);
        assertThat(o.out()).contains("proxy-decode-unanswered")
                .containsPattern("proxy0  " + java.util.regex.Pattern.quote(RID) + "  -  proxy-decode-unanswered  class -  "
                        + "the proxy sent the decode leg to 10\\.0\\.1\\.1:8200 \\(WRITE, prefill 10\\.0\\.0\\.1:8100\\): no answer "
                        + "by the end of the proxy's journal, 36\\.979998 s after it was sent")
                .contains("stuck-waiting")
                .contains("hangs: 2 journal(s) (D0, P0) and proxy journal(s) proxy,")
                .contains("on 2 of 2 node(s) and 1 of 1 proxy journal(s)");
        assertThat(o.out()).doesNotContain("proxy-prefill-failed");

        SimJournals.Outcome alone = run("hangs", proxy.toString());
        assertThat(alone.code()).as(alone.err()).isEqualTo(1);
        assertThat(alone.out()).contains("proxy-decode-unanswered");
    }

    @Test
    void inspect_merges_the_proxys_legs_into_the_requests_timeline() {
        Path proxy = proxyJournal();
        SimJournals.Outcome o = run("inspect", fixture(), proxy.toString(), "--request", UUID);
        assertThat(o.code()).as(o.err()).isZero();
        String out = o.out();
        assertThat(out).contains("in 2 journal(s) (D0, P0) and proxy journal(s) proxy0").contains("proxy0  #3  request_routed").contains("proxy0  #5  leg_sent decode")
                .contains("proxy0  #6  leg_answered prefill").contains("D0  #1  request_admitted");
        assertThat(out.indexOf("request_routed")).isLessThan(out.indexOf("D0  #1  request_admitted"));
        assertThat(out).doesNotContain("instance_expired").doesNotContain("proxy_started");

        SimJournals.Outcome alone = run("inspect", proxy.toString(), "--request", UUID);
        assertThat(alone.code()).as(alone.err()).isZero();
        assertThat(alone.out()).contains("proxy0  #3  request_routed").doesNotContain("D0");

        SimJournals.Outcome byTid = run("inspect", fixture(), proxy.toString(), "--transfer", TID);
        assertThat(byTid.code()).as(byTid.err()).isZero();
        assertThat(byTid.out()).contains("leg_sent prefill").contains("request_admitted");
    }

    @Test
    void dump_and_export_read_a_proxy_journal() {
        Path proxy = proxyJournal();
        SimJournals.Outcome d = run("dump", proxy.toString());
        assertThat(d.code()).as(d.err()).isZero();
        assertThat(d.out()).contains("header proxy0 proxy WRITE").containsPattern("proxy +leg_answered prefill");
        SimJournals.Outcome v = run("verify", proxy.toString());
        assertThat(v.code()).as(v.out() + v.err()).isZero();
    }

    @Test
    void the_proxy_command_runs_journals_and_stops_and_refuses_bad_options() {
        Path dir = tmp.resolve("pj");
        SimJournals.Outcome o = run("proxy", "--port", "0", "--ping-port", "0", "--mode", "read", "--journal",
                dir.toString(), "--notify-port-shift", "100", "--duration-s", "0.3");
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.err()).containsPattern("proxy proxy: http 127\\.0\\.0\\.1:\\d+, registrations on tcp://127\\.0\\.0\\.1:\\d+, "
                + "mode READ, notify/handshake ports in request ids shifted by 100; journal ");
        assertThat(o.out()).contains("proxy proxy: stopped; 0 registration message(s), 0 rejected; 1 record(s) in journal");
        SimJournals.Outcome d = run("dump", dir.toString());
        assertThat(d.out()).contains("header proxy proxy READ").contains("proxy_started")
                .contains("mode=READ notify_port_shift=100");

        SimJournals.Outcome bad = run("proxy", "--mode", "sideways");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("--mode takes read or write, got sideways").contains("see 'kvledger help proxy'");
        SimJournals.Outcome ttl = run("proxy", "--registration-ttl-s", "0");
        assertThat(ttl.code()).isEqualTo(2);
        assertThat(ttl.err()).contains("--registration-ttl-s must be a positive number of seconds");
        SimJournals.Outcome otlp = run("proxy", "--otlp", "ftp://somewhere");
        assertThat(otlp.code()).isEqualTo(2);
        assertThat(otlp.err()).contains("--otlp takes an http(s)://HOST:PORT URL");

        // --serve-journals: a directory that does not exist yet is said so (the page shows it once it exists)
        SimJournals.Outcome later = run("proxy", "--port", "0", "--ping-port", "0", "--serve-journals",
                tmp.resolve("not-yet").toString(), "--duration-s", "0.2");
        assertThat(later.code()).as(later.err()).isZero();
        assertThat(later.err()).contains("--serve-journals").contains("not a directory yet");
    }
}
