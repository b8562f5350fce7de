package io.gdrkit.softnic;

import io.gdrkit.softnic.queue.RecvQueue;
import io.gdrkit.softnic.queue.SendQueue;
import io.gdrkit.softnic.wire.Packet;
import io.gdrkit.verbs.AccessFlags;
import io.gdrkit.verbs.WcStatus;
import java.lang.foreign.MemorySegment;

/**
 * Moves bytes between a WQE's scatter/gather list and a packet. Every call looks each lkey up again, so an MR
 * deregistered between two packets of one message is never touched.
 */
final class Sgl {
    private Sgl() {
    }

    /**
     * Checks a send WQE's SGEs: live lkeys of the QP's PD, ranges inside their MRs, LOCAL_WRITE when the NIC
     * will write them (READ and ATOMIC results). Returns a WcStatus.
     */
    static int checkSend(final SoftDevice dev, final SoftQp qp, final SendQueue sq, final long index,
                         final boolean nicWrites) {
        final int n = sq.numSge(index);
        for (int i = 0; i < n; i++) {
            final int len = sq.sgeLength(index, i);
            if (len == 0) {
                continue;
            }
            final SoftMr mr = dev.mrs.lookup(sq.sgeLkey(index, i));
            if (mr == null || mr.pd != qp.pd || !mr.contains(sq.sgeAddr(index, i), Integer.toUnsignedLong(len))
                || (nicWrites && (mr.access & AccessFlags.LOCAL_WRITE) == 0)) {
                return WcStatus.LOC_PROT_ERR;
            }
        }
        return WcStatus.SUCCESS;
    }

    /** Copies {@code len} bytes starting {@code offset} bytes into the WQE's gather list to dst. */
    static int gather(final SoftDevice dev, final SoftQp qp, final SendQueue sq, final long index, long offset,
                      final MemorySegment dst, long dstOffset, int len) {
        final int n = sq.numSge(index);
        for (int i = 0; i < n && len > 0; i++) {
            final long sgeLen = Integer.toUnsignedLong(sq.sgeLength(index, i));
            if (offset >= sgeLen) {
                offset -= sgeLen;
                continue;
            }
            final int chunk = (int) Math.min(len, sgeLen - offset);
            final long addr = sq.sgeAddr(index, i) + offset;
            final SoftMr mr = dev.mrs.lookup(sq.sgeLkey(index, i));
            if (mr == null || mr.pd != qp.pd || !mr.contains(addr, chunk)) {
                return WcStatus.LOC_PROT_ERR;
            }
            mr.copyOut(addr, dst, dstOffset, chunk);
            dstOffset += chunk;
            len -= chunk;
            offset = 0;
        }
        return len == 0 ? WcStatus.SUCCESS : WcStatus.LOC_LEN_ERR;
    }

    /**
     * How many segments reference {@code len} bytes starting {@code offset} bytes into the WQE's gather list, or 0
     * when some of them may not be referenced (an MR that is not {@link SoftMr#referable}, or any problem the
     * copy path must report: {@link #gather} then finds it). With {@code into}, also writes the references into
     * that packet (already made a reference packet of that many segments).
     */
    static int references(final SoftDevice dev, final SoftQp qp, final SendQueue sq, final long index, long offset,
                          int len, final Packet into) {
        final int n = sq.numSge(index);
        int segments = 0;
        for (int i = 0; i < n && len > 0; i++) {
            final long sgeLen = Integer.toUnsignedLong(sq.sgeLength(index, i));
            if (offset >= sgeLen) {
                offset -= sgeLen;
                continue;
            }
            final int chunk = (int) Math.min(len, sgeLen - offset);
            final long addr = sq.sgeAddr(index, i) + offset;
            final SoftMr mr = dev.mrs.lookup(sq.sgeLkey(index, i));
            if (mr == null || !mr.referable || mr.pd != qp.pd || !mr.contains(addr, chunk)) {
                return 0;
            }
            if (into != null) {
                into.refEntry(segments, addr, mr.key, chunk);
            }
            segments++;
            len -= chunk;
            offset = 0;
        }
        return len == 0 ? segments : 0;
    }

    /** Copies into the WQE's scatter list (READ responses, ATOMIC results). */
    static int scatterSend(final SoftDevice dev, final SoftQp qp, final SendQueue sq, final long index, long offset,
                           final MemorySegment src, long srcOffset, int len) {
        final int n = sq.numSge(index);
        for (int i = 0; i < n && len > 0; i++) {
            final long sgeLen = Integer.toUnsignedLong(sq.sgeLength(index, i));
            if (offset >= sgeLen) {
                offset -= sgeLen;
                continue;
            }
            final int chunk = (int) Math.min(len, sgeLen - offset);
            final long addr = sq.sgeAddr(index, i) + offset;
            final SoftMr mr = dev.mrs.lookup(sq.sgeLkey(index, i));
            if (mr == null || mr.pd != qp.pd || !mr.contains(addr, chunk)
                || (mr.access & AccessFlags.LOCAL_WRITE) == 0) {
                return WcStatus.LOC_PROT_ERR;
            }
            mr.copyIn(src, srcOffset, addr, chunk);
            qp.noteDmaWrite(mr);
            srcOffset += chunk;
            len -= chunk;
            offset = 0;
        }
        return len == 0 ? WcStatus.SUCCESS : WcStatus.LOC_LEN_ERR;
    }

    /** Copies into a receive WQE's scatter list; LOC_LEN_ERR when the message does not fit. */
    static int scatterRecv(final SoftDevice dev, final SoftQp qp, final RecvQueue rq, final long index, long offset,
                           final MemorySegment src, long srcOffset, int len) {
        final int n = rq.numSge(index);
        for (int i = 0; i < n && len > 0; i++) {
            final long sgeLen = Integer.toUnsignedLong(rq.sgeLength(index, i));
            if (offset >= sgeLen) {
                offset -= sgeLen;
                continue;
            }
            final int chunk = (int) Math.min(len, sgeLen - offset);
            final long addr = rq.sgeAddr(index, i) + offset;
            final SoftMr mr = dev.mrs.lookup(rq.sgeLkey(index, i));
            if (mr == null || mr.pd != qp.pd || !mr.contains(addr, chunk)
                || (mr.access & AccessFlags.LOCAL_WRITE) == 0) {
                return WcStatus.LOC_PROT_ERR;
            }
            mr.copyIn(src, srcOffset, addr, chunk);
            qp.noteDmaWrite(mr);
            srcOffset += chunk;
            len -= chunk;
            offset = 0;
        }
        return len == 0 ? WcStatus.SUCCESS : WcStatus.LOC_LEN_ERR;
    }
}
