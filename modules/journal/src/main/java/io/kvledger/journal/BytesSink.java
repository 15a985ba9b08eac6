package io.kvledger.journal;

import org.msgpack.core.buffer.MessageBuffer;
import org.msgpack.core.buffer.MessageBufferOutput;

/**
 * Lets msgpack-java's packer (the generic schema encoder, for the entry types {@link FastPayloads}
 * leaves to it) write into the group buffer the journal writer is building: the packer fills this
 * sink's reusable buffer and each flush copies it into {@link #heap}. No allocation per entry.
 */
final class BytesSink implements MessageBufferOutput {

    /** Where the bytes go (set by the writer around each use). */
    GroupBuffer heap;
    private byte[] array = new byte[8192];
    private MessageBuffer buffer = MessageBuffer.wrap(array);

    @Override
    public MessageBuffer next(int minimumSize) {
        if (minimumSize > array.length) {
            array = new byte[Math.max(minimumSize, array.length * 2)];
            buffer = MessageBuffer.wrap(array);
        }
        return buffer;
    }

    @Override
    public void writeBuffer(int length) {
        heap.put(array, 0, length);
    }

    @Override
    public void write(byte[] buffer, int offset, int length) {
        heap.put(buffer, offset, length);
    }

    @Override
    public void add(byte[] buffer, int offset, int length) {
        heap.put(buffer, offset, length);
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
    }
}
