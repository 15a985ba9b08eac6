package io.kvledger.wire;

import java.io.ByteArrayOutputStream;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/** Test helpers: build frames from Python-like values, hex, and byte pieces. */
final class Frames2 {

    private Frames2() {}

    static byte[] py(Object value) {
        return PyMsgpack.encode(value);
    }

    /** A LinkedHashMap from alternating keys and values. */
    static Map<String, Object> map(Object... kv) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static byte[] hex(String h) {
        return HexFormat.of().parseHex(h.replace(" ", ""));
    }

    static String hex(byte[] b) {
        return HexFormat.of().formatHex(b);
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }

    /** The bytes a thread allocates while running {@code r} (HotSpot's per-thread counter). */
    static long allocatedBy(Runnable r) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long id = Thread.currentThread().threadId();
        long before = mx.getThreadAllocatedBytes(id);
        r.run();
        return mx.getThreadAllocatedBytes(id) - before;
    }
}
