package io.kvledger.core.config;

import java.util.EnumSet;
import java.util.Set;

/**
 * The set of {@link Switch}es a node runs with. Presets bundle them: {@link #vllm239b5ff30()} the
 * scheduler of vLLM main at 239b5ff30, {@link #seed()} the seed scheduler branch for branch,
 * {@link #newest()} the scheduler of vLLM main at 3c201bf2 (the default). Which preset a recording
 * of a given vLLM version needs is {@link UpstreamVersions}'s table.
 * Immutable; {@link #with} returns a modified copy.
 */
public final class Behaviour {

    private final EnumSet<Switch> enabled;
    /**
     * {@link #enabled} as bits by ordinal: {@link #on} is asked a dozen times per event, and a bit
     * test of a final array costs less than {@code EnumSet.contains} (a virtual call and a class check).
     */
    private final long[] bits;
    private final String profile;

    private Behaviour(EnumSet<Switch> enabled, String profile) {
        this.enabled = enabled;
        this.profile = profile;
        long[] b = new long[(Switch.values().length + 63) >>> 6];
        for (Switch s : enabled) {
            b[s.ordinal() >>> 6] |= 1L << s.ordinal();
        }
        this.bits = b;
    }

    /**
     * The scheduler side of vLLM main at commit 3c201bf24f9a5a2176b72c1c01d5645fdec8a7d0 (SupportsHMA
     * MoRIIO: sliding-window and mamba groups, list-of-lists block ids, multi-pod WRITE routing), read
     * from its moriio_connector.py and checked call by call against it by
     * benchmarks/upstream-differential.sh; open upstream PRs are switches, off here.
     */
    public static Behaviour newest() {
        return preset(Switch::inNewest, "newest");
    }

    public static Behaviour seed() {
        return preset(Switch::inSeed, "seed");
    }

    /** The scheduler side of vLLM main at commit 239b5ff30 (2026-05-18), before the seed. */
    public static Behaviour vllm239b5ff30() {
        return preset(Switch::in239b5ff30, V239B5FF30);
    }

    /** The name of the {@link #vllm239b5ff30()} preset. */
    public static final String V239B5FF30 = "vllm-239b5ff30";

    /** The preset names, oldest connector first. */
    public static final java.util.List<String> PRESETS = java.util.List.of(V239B5FF30, "seed", "newest");

    private static Behaviour preset(java.util.function.Predicate<Switch> member, String name) {
        EnumSet<Switch> s = EnumSet.noneOf(Switch.class);
        for (Switch sw : Switch.values()) {
            if (member.test(sw)) {
                s.add(sw);
            }
        }
        return new Behaviour(s, name);
    }

    /** The preset called {@code name} (one of {@link #PRESETS}), or {@code null}. */
    public static Behaviour preset(String name) {
        return switch (name) {
            case "seed" -> seed();
            case "newest" -> newest();
            case V239B5FF30 -> vllm239b5ff30();
            default -> null;
        };
    }

    public boolean on(Switch s) {
        int o = s.ordinal();
        return (bits[o >>> 6] & (1L << o)) != 0;
    }

    public Behaviour with(Switch s, boolean on) {
        EnumSet<Switch> copy = EnumSet.copyOf(enabled);
        if (on) {
            copy.add(s);
        } else {
            copy.remove(s);
        }
        String base = profile.endsWith("+custom") ? profile.substring(0, profile.length() - 7) : profile;
        String name = copy.equals(preset(base).enabled) ? base : base + "+custom";
        return new Behaviour(copy, name);
    }

    /** A preset name ({@link #PRESETS}), followed by "+custom" once a switch was changed. */
    public String profile() {
        return profile;
    }

    public Set<Switch> enabled() {
        return EnumSet.copyOf(enabled);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Behaviour b && b.enabled.equals(enabled);
    }

    @Override
    public int hashCode() {
        return enabled.hashCode();
    }

    @Override
    public String toString() {
        return profile + enabled;
    }
}
