package io.kvledger.core.node;

import java.util.Objects;

/**
 * The phase table's index from request id to {@link PhaseTable.Cell}: an open-addressing hash
 * table (linear probing, deletion by backward shift) that keeps each entry's hash in an
 * {@code int} array beside the cells. Only looked up, never iterated, so its layout cannot leak
 * into any order.
 *
 * <p>Why not the {@code LinkedHashMap} it replaces: a live node keeps 65,536 finished requests in
 * the phase table, so every admission missed the cache on the map's bucket, on the nodes of the
 * bucket's chain and, for the eviction of the eldest entry, on the eldest key's {@code String}
 * (for its hash) and its bucket and chain. Here a probe reads the hash array and touches a cell
 * only when the hashes match, and the eldest entry is found by the hash its cell keeps.
 */
final class CellIndex {

    private int[] hashes;
    private PhaseTable.Cell[] cells;
    private int count;

    CellIndex(int capacity) {
        int n = Integer.highestOneBit(Math.max(capacity, 8) - 1) << 1;
        hashes = new int[n];
        cells = new PhaseTable.Cell[n];
    }

    /** The spread hash of a key, as the cells keep it. */
    static int hash(Object key) {
        int h = Objects.hashCode(key) * 0x9E3779B9;
        return h ^ (h >>> 16);
    }

    int size() {
        return count;
    }

    /** The cell of {@code key}, or {@code null}. */
    PhaseTable.Cell get(Object key) {
        int h = hash(key);
        int mask = cells.length - 1;
        for (int i = h & mask; ; i = (i + 1) & mask) {
            PhaseTable.Cell c = cells[i];
            if (c == null) {
                return null;
            }
            if (hashes[i] == h && (c.key == key || Objects.equals(c.key, key))) {
                return c;
            }
        }
    }

    /** Inserts {@code fresh} unless its key has a cell; returns that cell, or {@code null} when inserted. */
    PhaseTable.Cell putIfAbsent(PhaseTable.Cell fresh) {
        int h = fresh.hash;
        int mask = cells.length - 1;
        int i = h & mask;
        for (; ; i = (i + 1) & mask) {
            PhaseTable.Cell c = cells[i];
            if (c == null) {
                break;
            }
            if (hashes[i] == h && (c.key == fresh.key || Objects.equals(c.key, fresh.key))) {
                return c;
            }
        }
        cells[i] = fresh;
        hashes[i] = h;
        if (++count * 2 > cells.length) {
            grow();
        }
        return null;
    }

    /** Removes the cell of {@code key}; returns it, or {@code null}. */
    PhaseTable.Cell remove(Object key) {
        PhaseTable.Cell c = get(key);
        if (c != null) {
            remove(c);
        }
        return c;
    }

    /** Removes {@code cell}, which is in the index. */
    void remove(PhaseTable.Cell cell) {
        int mask = cells.length - 1;
        int i = cell.hash & mask;
        while (cells[i] != cell) {
            i = (i + 1) & mask;
        }
        // backward shift: move later entries of the probe run into the hole when their home allows
        for (int j = (i + 1) & mask; cells[j] != null; j = (j + 1) & mask) {
            int home = hashes[j] & mask;
            boolean movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
            if (movable) {
                cells[i] = cells[j];
                hashes[i] = hashes[j];
                i = j;
            }
        }
        cells[i] = null;
        hashes[i] = 0;
        count--;
    }

    private void grow() {
        int[] oldHashes = hashes;
        PhaseTable.Cell[] oldCells = cells;
        int n = oldCells.length * 2;
        hashes = new int[n];
        cells = new PhaseTable.Cell[n];
        int mask = n - 1;
        for (int k = 0; k < oldCells.length; k++) {
            PhaseTable.Cell c = oldCells[k];
            if (c != null) {
                int i = oldHashes[k] & mask;
                while (cells[i] != null) {
                    i = (i + 1) & mask;
                }
                cells[i] = c;
                hashes[i] = oldHashes[k];
            }
        }
    }
}
