package io.kvledger.journal.format;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.effect.Effect;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.Samples;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Keeps {@code journal/FORMAT.md} in step with the registry: the section between the
 * {@code generated} markers is rendered from {@link EntryType} and {@link Samples}. Run with
 * {@code -Dkvledger.regenerate=true} to rewrite it after a change.
 */
class FormatDocTest {

    static final Path DOC = Path.of("..", "..", "journal", "FORMAT.md");
    static final String BEGIN = "<!-- generated: type table and examples (FormatDocTest) -->";
    static final String END = "<!-- end of generated section -->";

    @Test
    void format_md_lists_every_type_with_its_fields_and_an_example() throws Exception {
        String generated = render();
        String doc = Files.readString(DOC, StandardCharsets.UTF_8);
        int b = doc.indexOf(BEGIN);
        int e = doc.indexOf(END);
        assertThat(b).as("begin marker in %s", DOC).isNotNegative();
        assertThat(e).as("end marker in %s", DOC).isGreaterThan(b);
        String current = doc.substring(b + BEGIN.length(), e);
        if (Boolean.getBoolean("kvledger.regenerate")) {
            Files.writeString(DOC, doc.substring(0, b + BEGIN.length()) + generated + doc.substring(e),
                    StandardCharsets.UTF_8);
            return;
        }
        assertThat(current).as("%s is out of date: rerun with -Dkvledger.regenerate=true", DOC).isEqualTo(generated);
    }

    static String render() {
        StringBuilder b = new StringBuilder("\n\n");
        b.append("| id | type | kind | record | payload fields, in order |\n|---:|---|---|---|---|\n");
        b.append("| 0 | `header` | header | `JournalHeader` | a map, see [Header](#header) |\n");
        for (EntryType t : EntryType.values()) {
            if (t == EntryType.HEADER) {
                continue;
            }
            String owner = NodeEvent.class.isAssignableFrom(t.recordClass()) ? "NodeEvent."
                    : io.kvledger.journal.proxy.ProxyEvent.class.isAssignableFrom(t.recordClass()) ? "ProxyEvent." : "Effect.";
            b.append("| ").append(t.id()).append(" | `").append(t.typeName()).append("` | ").append(t.kind().label())
                    .append(" | `").append(owner).append(t.recordClass().getSimpleName()).append("` | ")
                    .append(fields(t.schema())).append(" |\n");
        }
        b.append("\nNested records (an array of fields in msgpack, an object in JSON):\n\n");
        b.append("| record | fields, in order |\n|---|---|\n");
        b.append("| `NodeEvent.CachedRequest` (in `scheduled_cached_reqs`) | ").append(fields(Nested.CACHED_REQUEST)).append(" |\n");
        b.append("| `NodeEvent.NewRequest` (in `scheduled_new_reqs`) | ").append(fields(Nested.NEW_REQUEST)).append(" |\n");
        b.append("| `ReqMeta` (in `reqs_to_recv`, `reqs_to_save`) | ").append(fields(Nested.REQ_META)).append(" |\n");
        b.append("| `NodeEvent.KvCacheTensor` (in `tensors`) | ").append(fields(Nested.KV_CACHE_TENSOR)).append(" |\n");
        b.append("| `NodeEvent.MatchedAnswer` (`acted` of `matched_tokens_queried`) | ").append(fields(Nested.MATCHED_ANSWER))
                .append(" |\n");
        b.append("| `NodeEvent.FinishAnswer` (`acted` of `request_finished`) | ").append(fields(Nested.FINISH_ANSWER))
                .append(" |\n");
        b.append("| `NodeEvent.FreedAnswer` (`acted` of `connector_output_received`) | ")
                .append(fields(Nested.FREED_ANSWER)).append(" |\n");
        b.append("\nField notation: `name` type; **?** may be null (absent in a JSON line means null); ")
                .append("**~** may be left out of a JSON line (it then takes its default: 0, false, -1 for lengths).\n");
        b.append("\n### Examples\n\nOne JSON line per type, then what its dissector prints.\n\n");
        b.append("#### 0 header\n\n```json\n").append(JsonLines.toJson(new JournalEntry.Header(0, Samples.header())))
                .append("\n```\n\n");
        List<NodeEvent> events = Samples.events();
        for (int i = 0; i < events.size(); i++) {
            NodeEvent e = events.get(i);
            example(b, EntryType.of(e), new JournalEntry.Input(i + 1, e.atNs(), e));
        }
        List<Effect> effects = Samples.effects();
        for (int i = 0; i < effects.size(); i++) {
            Effect f = effects.get(i);
            example(b, EntryType.of(f), new JournalEntry.Derived(100 + i, 1, Samples.T0, f));
        }
        b.append("Proxy records (kind `proxy`, only in a journal whose header's `kv_role` is `proxy`):\n\n");
        b.append("#### 0 header (a proxy's)\n\n```json\n").append(JsonLines.toJson(new JournalEntry.Header(0,
                JournalHeader.proxy("proxy", io.kvledger.core.config.TransferMode.READ, "kvledger proxy"))))
                .append("\n```\n\n");
        var proxy = Samples.proxyEvents();
        for (int i = 0; i < proxy.size(); i++) {
            var p = proxy.get(i);
            example(b, EntryType.of(p), new JournalEntry.Proxy(i + 1, p.atNs(), p));
        }
        return b.toString();
    }

    private static void example(StringBuilder b, EntryType t, JournalEntry e) {
        b.append("#### ").append(t.id()).append(' ').append(t.typeName()).append("\n\n```json\n")
                .append(JsonLines.toJson(e)).append("\n```\n\n```\n").append(e.dissect()).append("\n```\n\n");
    }

    private static String fields(Schema<?> s) {
        if (s.fields().isEmpty()) {
            return "(none: an empty array)";
        }
        StringBuilder b = new StringBuilder();
        for (Field f : s.fields()) {
            if (!b.isEmpty()) {
                b.append(", ");
            }
            b.append('`').append(f.name()).append("` ").append(f.type().doc().replace("|", "\\|"));
            if (f.nullable()) {
                b.append(" **?**");
            } else if (f.optional()) {
                b.append(" **~**");
            }
        }
        return b.toString();
    }
}
