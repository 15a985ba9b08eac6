package io.kvledger.ledger.report;

import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.format.EntryType;
import java.util.BitSet;
import java.util.List;

/**
 * The {@code --type T} filter of {@code kvledger dump} and {@code tail}: type names ({@code remote_blocks_received}) or
 * permanent type ids ({@code 14}), repeated or comma-separated. An id this version does not know
 * is accepted (it selects the {@code unknown} entries of that id); an unknown name is an error.
 */
public final class TypeFilter {

    private final BitSet ids = new BitSet();
    private final boolean all;

    private TypeFilter(boolean all) {
        this.all = all;
    }

    /** Every entry. */
    static TypeFilter any() {
        return new TypeFilter(true);
    }

    /**
     * Parses the option values.
     *
     * @throws IllegalArgumentException naming the value that is neither a type name nor an id
     */
    public static TypeFilter parse(List<String> values) {
        if (values == null || values.isEmpty()) {
            return any();
        }
        TypeFilter f = new TypeFilter(false);
        for (String v : values) {
            for (String token : v.split(",")) {
                String t = token.strip();
                if (t.isEmpty()) {
                    continue;
                }
                if (t.chars().allMatch(Character::isDigit)) {
                    int id;
                    try {
                        id = Integer.parseInt(t);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("type id " + t + " is too large");
                    }
                    if (id > 0xFFFF) {
                        throw new IllegalArgumentException("type id " + t + " is out of range (0-65535)");
                    }
                    f.ids.set(id);
                    continue;
                }
                EntryType type = EntryType.byName(t);
                if (type == null) {
                    throw new IllegalArgumentException("unknown type '" + t + "': give a type name such as "
                            + "remote_blocks_received or send_release, or a type id (journal/FORMAT.md lists them)"
                            + suggestion(t));
                }
                f.ids.set(type.id());
            }
        }
        if (f.ids.isEmpty()) {
            throw new IllegalArgumentException("--type needs at least one type name or id");
        }
        return f;
    }

    private static String suggestion(String t) {
        for (EntryType e : EntryType.values()) {
            if (e.typeName().contains(t) || t.contains(e.typeName())) {
                return "; did you mean " + e.typeName() + "?";
            }
        }
        return "";
    }

    /** Whether entry {@code e} is of a type this filter selects. */
    public boolean accepts(JournalEntry e) {
        return all || ids.get(e.typeId());
    }
}
