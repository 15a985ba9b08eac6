package io.kvledger.rdma;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.Objects;
import java.util.UUID;
import java.util.zip.CRC32;

/**
 * What a peer needs to reach one registered region, in the shape of MoRIIO's packed
 * {@code MemoryDesc}: the owning engine's worker address, the region's remote key, its base
 * address and its length, plus the identity of the engine and region so that a descriptor for
 * the wrong region can be told apart.
 *
 * <p>Serialized form ({@link #encode()}), big-endian: magic {@code "KVRD"}, version byte 2,
 * engine kind (u8 length + UTF-8), engine id (16 bytes), host id (u8 length + UTF-8, see
 * {@link HostId}), owner process id (u64) and start (u64, clock ticks since the host's boot, see
 * {@link ProcessStart}; 0 if unknown), region id (u64), region name (u16 length + UTF-8), base
 * address (u64), length (u64), worker address (u32 length + bytes), remote key (u32 length +
 * bytes), CRC-32 of everything before it (u32). {@link #toText()} is that in URL-safe base64
 * behind the prefix {@code kvrd1:}, for stdin/stdout or a file. Version 1, from older builds, is
 * the same but for the owner's start, which was epoch milliseconds as that JVM saw them: it is
 * read as unknown, so such an owner is checked by its pid alone.
 *
 * <p>Decoding never throws: a damaged or truncated descriptor is a
 * {@link FailureCode#BAD_DESCRIPTOR}. The checksum is what keeps a damaged remote key away from
 * UCX, which would otherwise parse it.
 */
public final class RegionDescriptor {

    /** Text prefix of {@link #toText()}. */
    static final String TEXT_PREFIX = "kvrd1:";
    private static final byte[] MAGIC = {'K', 'V', 'R', 'D'};
    private static final int VERSION = 2;
    /** The older form, whose owner start was a wall-clock time (see the class comment). */
    private static final int VERSION_WALL_CLOCK_START = 1;
    private static final int MAX_BLOB = 1 << 16;
    private static final int MAX_NAME = 1024;

    private final String engineKind;
    private final UUID engineId;
    private final String hostId;
    private final long ownerPid;
    private final long ownerStartTicks;
    private final long regionId;
    private final String name;
    private final long baseAddress;
    private final long length;
    private final byte[] workerAddress;
    private final byte[] rkey;

    private RegionDescriptor(String engineKind, UUID engineId, String hostId, long ownerPid, long ownerStartTicks,
                             long regionId, String name, long baseAddress, long length, byte[] workerAddress,
                             byte[] rkey) {
        this.engineKind = engineKind;
        this.engineId = engineId;
        this.hostId = hostId;
        this.ownerPid = ownerPid;
        this.ownerStartTicks = ownerStartTicks;
        this.regionId = regionId;
        this.name = name;
        this.baseAddress = baseAddress;
        this.length = length;
        this.workerAddress = workerAddress;
        this.rkey = rkey;
    }

    /**
     * A descriptor; the engines build these, tests build damaged ones.
     *
     * @return the descriptor, or {@link FailureCode#INVALID_ARGUMENT} naming the bad field
     */
    public static Result<RegionDescriptor> of(String engineKind, UUID engineId, long regionId, String name,
                                              long baseAddress, long length, byte[] workerAddress, byte[] rkey) {
        return of(engineKind, engineId, HostId.current(), regionId, name, baseAddress, length, workerAddress, rkey);
    }

    /** As {@link #of(String, UUID, long, String, long, long, byte[], byte[])}, naming the owner's host. */
    public static Result<RegionDescriptor> of(String engineKind, UUID engineId, String hostId, long regionId,
                                              String name, long baseAddress, long length, byte[] workerAddress,
                                              byte[] rkey) {
        return of(engineKind, engineId, hostId, ProcessHandle.current().pid(), ProcessStart.ofSelf(), regionId, name,
                baseAddress, length, workerAddress, rkey);
    }

    /** Every field given, the owning process's id and start time too (for tests and decoding). */
    static Result<RegionDescriptor> of(String engineKind, UUID engineId, String hostId, long ownerPid,
                                              long ownerStartTicks, long regionId, String name, long baseAddress,
                                              long length, byte[] workerAddress, byte[] rkey) {
        if (engineKind == null || engineKind.isEmpty() || engineKind.getBytes(StandardCharsets.UTF_8).length > 255) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "engine kind must be 1..255 UTF-8 bytes, got " + engineKind);
        }
        if (engineId == null) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "engine id is null");
        }
        if (hostId == null || hostId.getBytes(StandardCharsets.UTF_8).length > 255) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "host id must be at most 255 UTF-8 bytes");
        }
        if (name == null || name.getBytes(StandardCharsets.UTF_8).length > MAX_NAME) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "region name must be at most " + MAX_NAME + " UTF-8 bytes");
        }
        if (length <= 0) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "region length must be positive, got " + length);
        }
        if (workerAddress == null || workerAddress.length > MAX_BLOB || rkey == null || rkey.length > MAX_BLOB) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "worker address and rkey must be non-null and at most "
                    + MAX_BLOB + " bytes");
        }
        return Result.ok(new RegionDescriptor(engineKind, engineId, hostId, ownerPid, ownerStartTicks, regionId, name,
                baseAddress, length, workerAddress.clone(), rkey.clone()));
    }

    public String engineKind() {
        return engineKind;
    }

    public UUID engineId() {
        return engineId;
    }

    /** The owning process's {@link HostId}. */
    String hostId() {
        return hostId;
    }

    /** The owning process's id (meaningful on its host). */
    public long ownerPid() {
        return ownerPid;
    }

    /** The owning process's start in clock ticks since its host's boot ({@link ProcessStart}), or 0 when unknown. */
    long ownerStartTicks() {
        return ownerStartTicks;
    }

    /**
     * For an owner on this host: whether that process still runs (same pid and the same start,
     * counted from boot, so that a step of the wall clock does not make it look like another
     * process). An owner whose start is unknown, or cannot be read here, is checked by its pid
     * alone; one that has exited but not been waited for yet (a zombie) is not alive. True for
     * owners on other hosts, which cannot be checked from here.
     */
    public boolean ownerAlive() {
        if (!isOnThisHost()) {
            return true;
        }
        if (ProcessHandle.of(ownerPid).filter(ProcessHandle::isAlive).isEmpty()) {
            return false;
        }
        long now = ProcessStart.of(ownerPid);
        return now != ProcessStart.EXITED && (ownerStartTicks == ProcessStart.UNKNOWN || now == ProcessStart.UNKNOWN
                || now == ownerStartTicks);
    }

    /** Whether the owner runs on this host (same host name and boot). */
    public boolean isOnThisHost() {
        return hostId.equals(HostId.current());
    }

    public long regionId() {
        return regionId;
    }

    public String name() {
        return name;
    }

    /** The region's address in its owner's address space (UCX RMA addresses are absolute). */
    public long baseAddress() {
        return baseAddress;
    }

    public long length() {
        return length;
    }

    /** A copy of the owning worker's address ({@code ucp_worker_get_address}). */
    public byte[] workerAddress() {
        return workerAddress.clone();
    }

    /** A copy of the packed remote key ({@code ucp_rkey_pack}). */
    public byte[] rkey() {
        return rkey.clone();
    }

    /** Whether this descriptor names the same region of the same engine as {@code other}. */
    boolean sameRegion(RegionDescriptor other) {
        return other != null && engineId.equals(other.engineId) && regionId == other.regionId;
    }

    /** The binary form (see the class comment). */
    public byte[] encode() {
        byte[] kind = engineKind.getBytes(StandardCharsets.UTF_8);
        byte[] host = hostId.getBytes(StandardCharsets.UTF_8);
        byte[] nm = name.getBytes(StandardCharsets.UTF_8);
        int size = 4 + 1 + 1 + kind.length + 16 + 1 + host.length + 8 + 8 + 8 + 2 + nm.length + 8 + 8 + 4
                + workerAddress.length + 4 + rkey.length + 4;
        ByteBuffer b = ByteBuffer.allocate(size);
        b.put(MAGIC).put((byte) VERSION).put((byte) kind.length).put(kind);
        b.putLong(engineId.getMostSignificantBits()).putLong(engineId.getLeastSignificantBits());
        b.put((byte) host.length).put(host).putLong(ownerPid).putLong(ownerStartTicks);
        b.putLong(regionId).putShort((short) nm.length).put(nm);
        b.putLong(baseAddress).putLong(length);
        b.putInt(workerAddress.length).put(workerAddress).putInt(rkey.length).put(rkey);
        CRC32 crc = new CRC32();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue());
        return b.array();
    }

    /** {@link #encode()} as text: {@code kvrd1:} and URL-safe base64 without padding. */
    public String toText() {
        return TEXT_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(encode());
    }

    /** Decodes {@link #encode()}'s form; never throws. */
    public static Result<RegionDescriptor> decode(byte[] bytes) {
        if (bytes == null) {
            return Result.err(FailureCode.BAD_DESCRIPTOR, "descriptor is null");
        }
        if (bytes.length < 4 + 1 + 4 || !Arrays.equals(bytes, 0, 4, MAGIC, 0, 4)) {
            return Result.err(FailureCode.BAD_DESCRIPTOR, "not a kvledger region descriptor (no KVRD magic, "
                    + bytes.length + " bytes)");
        }
        if (bytes[4] != VERSION && bytes[4] != VERSION_WALL_CLOCK_START) {
            return Result.err(FailureCode.BAD_DESCRIPTOR, "descriptor version " + bytes[4] + ", this build reads "
                    + VERSION_WALL_CLOCK_START + " and " + VERSION);
        }
        CRC32 crc = new CRC32();
        crc.update(bytes, 0, bytes.length - 4);
        int stored = ByteBuffer.wrap(bytes, bytes.length - 4, 4).getInt();
        if ((int) crc.getValue() != stored) {
            return Result.err(FailureCode.BAD_DESCRIPTOR, "descriptor checksum mismatch (damaged in transit?)");
        }
        try {
            ByteBuffer b = ByteBuffer.wrap(bytes, 5, bytes.length - 9);
            String kind = new String(blob(b, b.get() & 0xff), StandardCharsets.UTF_8);
            UUID id = new UUID(b.getLong(), b.getLong());
            String host = new String(blob(b, b.get() & 0xff), StandardCharsets.UTF_8);
            long pid = b.getLong();
            long start = b.getLong();
            if (bytes[4] == VERSION_WALL_CLOCK_START) {
                start = ProcessStart.UNKNOWN;
            }
            long regionId = b.getLong();
            String nm = new String(blob(b, b.getShort() & 0xffff), StandardCharsets.UTF_8);
            long base = b.getLong();
            long len = b.getLong();
            byte[] worker = blob(b, b.getInt());
            byte[] rk = blob(b, b.getInt());
            if (b.hasRemaining()) {
                return Result.err(FailureCode.BAD_DESCRIPTOR, b.remaining() + " trailing bytes after the remote key");
            }
            Result<RegionDescriptor> r = of(kind, id, host, pid, start, regionId, nm, base, len, worker, rk);
            return r.isOk() ? r : Result.err(FailureCode.BAD_DESCRIPTOR, "descriptor field invalid: "
                    + r.errorOrNull().message());
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            return Result.err(FailureCode.BAD_DESCRIPTOR, "descriptor truncated or has a bad length field");
        }
    }

    private static byte[] blob(ByteBuffer b, int len) {
        if (len < 0 || len > MAX_BLOB || len > b.remaining()) {
            throw new IllegalArgumentException("length " + len);
        }
        byte[] out = new byte[len];
        b.get(out);
        return out;
    }

    /** Parses {@link #toText()}'s form (surrounding whitespace allowed); never throws. */
    public static Result<RegionDescriptor> parse(String text) {
        if (text == null) {
            return Result.err(FailureCode.BAD_DESCRIPTOR, "descriptor text is null");
        }
        String t = text.strip();
        if (!t.startsWith(TEXT_PREFIX)) {
            return Result.err(FailureCode.BAD_DESCRIPTOR, "descriptor text must start with " + TEXT_PREFIX);
        }
        try {
            return decode(Base64.getUrlDecoder().decode(t.substring(TEXT_PREFIX.length())));
        } catch (IllegalArgumentException e) {
            return Result.err(FailureCode.BAD_DESCRIPTOR, "descriptor text is not base64: " + e.getMessage());
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RegionDescriptor d && engineKind.equals(d.engineKind) && engineId.equals(d.engineId)
                && hostId.equals(d.hostId) && ownerPid == d.ownerPid && ownerStartTicks == d.ownerStartTicks
                && regionId == d.regionId && name.equals(d.name) && baseAddress == d.baseAddress
                && length == d.length && Arrays.equals(workerAddress, d.workerAddress) && Arrays.equals(rkey, d.rkey);
    }

    @Override
    public int hashCode() {
        return Objects.hash(engineId, regionId, baseAddress, length);
    }

    @Override
    public String toString() {
        return "RegionDescriptor[" + engineKind + " " + engineId + " on " + hostId + " pid " + ownerPid + " region " + regionId + " '" + name + "' base 0x"
                + Long.toHexString(baseAddress) + " length " + length + ", worker address " + workerAddress.length
                + " B, rkey " + rkey.length + " B]";
    }
}
