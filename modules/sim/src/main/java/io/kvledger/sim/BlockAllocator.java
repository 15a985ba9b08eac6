package io.kvledger.sim;

import java.util.ArrayDeque;
import java.util.List;

/**
 * One engine's KV block pool. Freed blocks go to the back of the free list and allocation takes
 * from the front, so ids are reused (a block freed too early is soon handed to another request,
 * as in vLLM).
 */
final class BlockAllocator {

    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private final int capacity;

    BlockAllocator(int capacity) {
        this.capacity = capacity;
        for (int i = 0; i < capacity; i++) {
            free.addLast(i);
        }
    }

    int free() {
        return free.size();
    }

    int inUse() {
        return capacity - free.size();
    }

    /** {@code n} block ids; the caller checked {@link #free()}. */
    int[] allocate(int n) {
        if (n > free.size()) {
            throw new IllegalStateException("allocating " + n + " blocks with " + free.size() + " free");
        }
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = free.pollFirst();
        }
        return ids;
    }

    void release(List<Integer> ids) {
        for (int id : ids) {
            free.addLast(id);
        }
    }
}
