package io.kvledger.rdma.ucx;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compares the output of {@code native/abi_probe} (sizes, offsets and constants as the C
 * compiler sees them in the installed headers) with {@link UcxAbi}.
 */
final class AbiCheck {

    private AbiCheck() {}

    /**
     * Every difference, one sentence each, naming the struct, field or constant and both values;
     * empty when the bindings match the headers.
     */
    static List<String> mismatches(List<String> probeLines, Map<String, StructLayout> structs,
                                   Map<String, Long> constants) {
        List<String> out = new ArrayList<>();
        Set<String> seenStructs = new LinkedHashSet<>();
        Set<String> seenConstants = new LinkedHashSet<>();
        for (String line : probeLines) {
            String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty()) {
                continue;
            }
            switch (w[0]) {
                case "version" -> {
                    if (Integer.parseInt(w[1]) != UcxAbi.API_MAJOR || Integer.parseInt(w[2]) != UcxAbi.API_MINOR) {
                        out.add("headers are UCX API " + w[1] + "." + w[2] + ", the Java layouts were written for "
                                + UcxAbi.API_MAJOR + "." + UcxAbi.API_MINOR + " (check every layout below, then update API_MINOR)");
                    }
                }
                case "size" -> {
                    seenStructs.add(w[1]);
                    StructLayout l = structs.get(w[1]);
                    long c = Long.parseLong(w[2]);
                    if (l == null) {
                        out.add(w[1] + ": the probe prints it but UcxAbi has no layout for it");
                    } else if (l.byteSize() != c) {
                        out.add(w[1] + ": sizeof is " + c + " bytes in C, the Java layout has " + l.byteSize());
                    }
                }
                case "offset" -> {
                    StructLayout l = structs.get(w[1]);
                    long c = Long.parseLong(w[3]);
                    if (l == null) {
                        continue; // reported under "size"
                    }
                    long j;
                    try {
                        j = l.byteOffset(groupElement(w[2]));
                    } catch (IllegalArgumentException e) {
                        out.add(w[1] + "." + w[2] + ": offset " + c + " in C, but the Java layout has no such field");
                        continue;
                    }
                    if (j != c) {
                        out.add(w[1] + "." + w[2] + ": offsetof is " + c + " in C, the Java layout puts it at " + j);
                    }
                }
                case "const" -> {
                    seenConstants.add(w[1]);
                    Long j = constants.get(w[1]);
                    long c = Long.parseLong(w[2]);
                    if (j == null) {
                        out.add(w[1] + ": the probe prints it but UcxAbi has no such constant");
                    } else if (j != c) {
                        out.add(w[1] + " is " + c + " in C, " + j + " in UcxAbi");
                    }
                }
                default -> out.add("unexpected probe line: " + line);
            }
        }
        for (String s : structs.keySet()) {
            if (!seenStructs.contains(s)) {
                out.add(s + ": UcxAbi lays it out but the probe does not check it (add it to native/abi_probe.c)");
            }
        }
        for (String c : constants.keySet()) {
            if (!seenConstants.contains(c)) {
                out.add(c + ": UcxAbi uses it but the probe does not print it (add it to native/abi_probe.c)");
            }
        }
        return out;
    }
}
