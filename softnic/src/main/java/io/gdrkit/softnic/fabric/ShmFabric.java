package io.gdrkit.softnic.fabric;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Software NICs in different processes of one host, joined through shared memory: every directed link is a
 * file {@code link-<src>-<dst>} in a directory (normally under /dev/shm) holding one {@link SpscRingBuffer},
 * mapped with FFM into both processes. Sending and receiving are plain loads and stores with acquire/release:
 * no system call per packet. A port claims its LID with a file {@code port-<lid>} that names its process; a
 * file left by a dead process is taken over.
 */
public final class ShmFabric implements Fabric {
    private final Path dir;
    private final int linkCapacity;
    private final int maxLid;
    private final Arena arena = Arena.ofShared();
    private volatile LinkHook hook;

    /**
     * @param dir          the directory shared by the processes, created if missing
     * @param linkCapacity ring bytes per link (power of two)
     * @param maxLid       highest LID a port may have; a port maps an inbound ring from each
     */
    private final boolean crc;

    public ShmFabric(final Path dir, final int linkCapacity, final int maxLid, final LinkHook hook) {
        this(dir, linkCapacity, maxLid, hook, true);
    }

    /** @param crc whether packets carry a CRC32C checked on receipt */
    public ShmFabric(final Path dir, final int linkCapacity, final int maxLid, final LinkHook hook,
                     final boolean crc) {
        this.crc = crc;
        if (maxLid < 1 || maxLid > 4096) {
            throw new IllegalArgumentException("maxLid " + maxLid + " outside 1..4096");
        }
        this.dir = dir;
        this.linkCapacity = linkCapacity;
        this.maxLid = maxLid;
        this.hook = hook == null ? LinkHook.PASS : hook;
        try {
            Files.createDirectories(dir);
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot create shared-memory fabric directory " + dir, e);
        }
    }

    @Override
    public void hook(final LinkHook hook) {
        this.hook = hook == null ? LinkHook.PASS : hook;
    }

    @Override
    public String describe() {
        return "shm:" + dir;
    }

    public Path directory() {
        return dir;
    }

    @Override
    public synchronized FabricPort attach(final int lid) {
        if (lid < 1 || lid > maxLid) {
            throw new IllegalArgumentException("shared-memory ports need an explicit LID in 1.." + maxLid
                + " (got " + lid + ")");
        }
        claimLid(lid);
        final SpscRingBuffer[] inbound = new SpscRingBuffer[maxLid];
        for (int src = 1; src <= maxLid; src++) {
            // the consumer owns its inbound rings: it starts them empty before any peer can know its QPs
            inbound[src - 1] = new SpscRingBuffer(map(linkFile(src, lid), true));
        }
        return new ShmPort(lid, inbound);
    }

    private void claimLid(final int lid) {
        final Path portFile = dir.resolve("port-" + lid);
        final String me = Long.toString(ProcessHandle.current().pid());
        try {
            Files.writeString(portFile, me, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        } catch (final FileAlreadyExistsException e) {
            final String owner = read(portFile);
            final boolean alive = owner.matches("\\d+") && ProcessHandle.of(Long.parseLong(owner))
                .map(ProcessHandle::isAlive).orElse(false);
            if (alive && !owner.equals(me)) {
                throw new IllegalStateException("LID " + lid + " on " + dir + " is held by live process " + owner);
            }
            try {
                Files.writeString(portFile, me, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
            } catch (final IOException io) {
                throw new UncheckedIOException("cannot take over " + portFile, io);
            }
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot claim " + portFile, e);
        }
    }

    private static String read(final Path p) {
        try {
            return Files.readString(p, StandardCharsets.US_ASCII).trim();
        } catch (final IOException e) {
            return "";
        }
    }

    private Path linkFile(final int src, final int dst) {
        return dir.resolve("link-" + src + "-" + dst);
    }

    private MemorySegment map(final Path file, final boolean resetAsConsumer) {
        final long size = SpscRingBuffer.segmentSize(linkCapacity);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
            StandardOpenOption.WRITE)) {
            if (ch.size() != size) {
                if (ch.size() != 0 && ch.size() != size) {
                    throw new IllegalStateException(file + " is " + ch.size() + " bytes, expected " + size
                        + ": another process uses a different link capacity");
                }
                ch.truncate(size);
                ch.position(size - 1);
                ch.write(java.nio.ByteBuffer.wrap(new byte[1]));
            }
            final MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            if (resetAsConsumer) {
                seg.asSlice(linkCapacity, SpscRingBuffer.TRAILER).fill((byte) 0);
            }
            return seg;
        } catch (final IOException e) {
            throw new UncheckedIOException("cannot map shared-memory link " + file, e);
        }
    }

    @Override
    public synchronized void close() {
        arena.close();
    }

    private final class ShmPort extends RingPort {
        private final SpscRingBuffer[] inbound;
        private final SpscRingBuffer[] outbound = new SpscRingBuffer[maxLid + 1];

        ShmPort(final int lid, final SpscRingBuffer[] inbound) {
            super(lid, crc, linkCapacity / 4);
            this.inbound = inbound;
        }

        @Override
        public int maxPacket() {
            return linkCapacity / 2 - SpscRingBuffer.HEADER;
        }

        @Override
        SpscRingBuffer outbound(final int dlid) {
            if (dlid < 1 || dlid > maxLid) {
                return null;
            }
            SpscRingBuffer ring = outbound[dlid];
            if (ring == null) {
                if (!Files.exists(dir.resolve("port-" + dlid))) {
                    return null; // nobody there: lost, as on a network
                }
                // first packet to this peer: map the link once (its consumer created and reset it)
                ring = new SpscRingBuffer(map(linkFile(lid(), dlid), false));
                outbound[dlid] = ring;
            }
            return ring;
        }

        @Override
        SpscRingBuffer[] inbound() {
            return inbound;
        }

        @Override
        LinkHook hook() {
            return hook;
        }
    }
}
