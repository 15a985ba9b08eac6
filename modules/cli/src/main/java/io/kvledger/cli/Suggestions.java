package io.kvledger.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * What a mistyped word was probably meant to be: the candidates nearest to it by edit distance
 * (insertions, deletions, substitutions and swaps of two neighbouring letters, each counting 1),
 * and only those within a small distance, so that a word like no command gets no suggestion
 * rather than a random one (picocli's own suggestions rank by letter-pair similarity and always
 * offer something close to any word). A word that starts a single candidate ({@code insp}) suggests it.
 */
final class Suggestions {

    private Suggestions() {}

    /**
     * The candidates nearest to {@code word}, in the order given, when within reach: distance at
     * most 1 for words of up to 3 letters, 2 up to 6, 3 beyond; none when nothing is that near.
     */
    static List<String> nearest(String word, List<String> candidates) {
        String w = word.toLowerCase(java.util.Locale.ROOT);
        List<String> prefixed = new ArrayList<>();
        for (String c : candidates) {
            if (w.length() >= 2 && c.startsWith(w) && !c.equals(w)) {
                prefixed.add(c);
            }
        }
        if (prefixed.size() == 1) {
            return prefixed;
        }
        int reach = w.length() <= 3 ? 1 : w.length() <= 6 ? 2 : 3;
        int best = Integer.MAX_VALUE;
        List<String> out = new ArrayList<>();
        for (String c : candidates) {
            int d = distance(w, c.toLowerCase(java.util.Locale.ROOT));
            if (d > reach || d > best) {
                continue;
            }
            if (d < best) {
                best = d;
                out.clear();
            }
            out.add(c);
        }
        return out;
    }

    /** The optimal string alignment distance between {@code a} and {@code b}. */
    static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                int v = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    v = Math.min(v, d[i - 2][j - 2] + 1);
                }
                d[i][j] = v;
            }
        }
        return d[a.length()][b.length()];
    }
}
