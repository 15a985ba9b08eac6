package io.kvledger.core.config;

import java.util.List;
import java.util.Locale;

/**
 * Which {@link Behaviour} preset models the MoRIIO connector of a given vLLM install: one row per
 * upstream version or commit whose scheduler side the presets were read from. A recording's header
 * names the install ({@code vllm_version}, {@code vllm_commit}, {@code inner_connector}); replay,
 * {@code hangs} and the shadow node take the profile from here when the header names none, and
 * {@code --profile} overrides both. The next upstream change is one more row (and, where its
 * behaviour differs, the switches and preset it needs).
 */
public final class UpstreamVersions {

    /**
     * One row: an install matches when its commit starts with {@code commit}'s first seven or more
     * characters (or {@code commit} with its), or, for rows with a {@code versionPrefix}, when its
     * version starts with it.
     *
     * @param commit        the upstream commit (full hash), or null for a version-only row
     * @param versionPrefix a {@code vllm.__version__} prefix ("0.12."), or null
     * @param profile       the preset name ({@link Behaviour#PRESETS})
     * @param what          what the row stands for
     */
    record Row(String commit, String versionPrefix, String profile, String what) {}

    /** The table, in the order it is searched. */
    static final List<Row> ROWS = List.of(
            new Row("239b5ff30cf46f9196149c888a20be2096fdff03", null, Behaviour.V239B5FF30,
                    "vLLM main 2026-05-18 (before the seed): MoRIIO mode from VLLM_MORIIO_CONNECTOR_READ_MODE, "
                            + "six-key request_finished params, no update_connector_output"),
            new Row("3c201bf24f9a5a2176b72c1c01d5645fdec8a7d0", null, "newest",
                    "vLLM main with SupportsHMA MoRIIO (SWA and mamba groups, grouped block ids, multi-pod WRITE "
                            + "routing): the newest preset is read from this commit's scheduler"));

    private UpstreamVersions() {}

    /**
     * The preset for an install, or null when the table has no row for it (or when the inner
     * connector is not MoRIIO, whose versions the presets model).
     *
     * @param vllmVersion    {@code vllm.__version__}, or null
     * @param vllmCommit     the install's git commit (any prefix of seven or more hex digits), or null
     * @param innerConnector the wrapped connector as "module.Class", or null (MoRIIO assumed)
     */
    public static String profileFor(String vllmVersion, String vllmCommit, String innerConnector) {
        if (innerConnector != null && !innerConnector.endsWith("MoRIIOConnector")) {
            return null;
        }
        String commit = vllmCommit != null ? vllmCommit : commitOf(vllmVersion);
        for (Row row : ROWS) {
            if (commit != null && row.commit() != null && sameCommit(commit, row.commit())) {
                return row.profile();
            }
            if (vllmVersion != null && row.versionPrefix() != null && vllmVersion.startsWith(row.versionPrefix())) {
                return row.profile();
            }
        }
        return null;
    }

    /** The commit of a dev version's local part ({@code 0.11.1.dev12+g239b5ff30.d20260518}), or null. */
    static String commitOf(String version) {
        if (version == null) {
            return null;
        }
        int plus = version.indexOf('+');
        if (plus < 0) {
            return null;
        }
        for (String part : version.substring(plus + 1).split("\\.")) {
            if (part.length() >= 8 && part.charAt(0) == 'g' && isHex(part.substring(1))) {
                return part.substring(1);
            }
        }
        return null;
    }

    private static boolean sameCommit(String a, String b) {
        String x = a.toLowerCase(Locale.ROOT);
        String y = b.toLowerCase(Locale.ROOT);
        return Math.min(x.length(), y.length()) >= 7 && isHex(x) && (x.startsWith(y) || y.startsWith(x));
    }

    private static boolean isHex(String s) {
        if (s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) {
                return false;
            }
        }
        return true;
    }
}
