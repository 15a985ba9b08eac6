package io.kvledger.journal;

import java.util.zip.CRC32C;
import net.openhft.chronicle.bytes.Bytes;
import org.msgpack.core.buffer.MessageBuffer;
import org.msgpack.core.buffer.MessageBufferOutput;

/**
 * Lets a msgpack packer write straight into the Chronicle excerpt being written: the packer fills
 * this sink's reusable buffer and each flush copies it into {@link #target}, updating
 * {@link #crc} with every byte it passes on. One copy, no allocation per entry. While the writer
 * builds a group excerpt, {@link #heap} is set instead and the bytes go there.
 */
final class BytesSink implements MessageBufferOutput {

    Bytes<?> target;
    /** When set (a group being built), bytes go here instead of {@link #target}. */
    GroupBuffer heap;
    final CRC32C crc = new CRC32C();
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
        write(array, 0, length);
    }

    @Override
    public void write(byte[] buffer, int offset, int length) {
        crc.update(buffer, offset, length);
        if (heap != null) {
            heap.put(buffer, offset, length);
        } else {
            target.write(buffer, offset, length);
        }
    }

    @Override
    public void add(byte[] buffer, int offset, int length) {
        write(buffer, offset, length);
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
    }
}
