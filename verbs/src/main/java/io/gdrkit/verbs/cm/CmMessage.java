package io.gdrkit.verbs.cm;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;

/**
 * One CM message on the TCP rendezvous connection, big-endian:
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                      magic 'G' 'D' 'C' 'M'                    |  0
 *  +---------------+---------------+-------------------------------+
 *  |    version    |     type      |        private data length    |  4
 *  +---------------+---------------+-------------------------------+
 *  |                          QP number                            |  8
 *  |                          start PSN                            | 12
 *  +-------------------------------+-------------------------------+
 *  |             LID               |          reserved             | 16
 *  +-------------------------------+-------------------------------+
 *  |                     path MTU in bytes                         | 20
 *  +---------------------------------------------------------------+
 *  |                     private data ...                          | 24
 * </pre>
 * REQ and REP carry the sender's QP; RTU confirms; REJ carries a reason as private data; DREQ/DREP disconnect.
 */
record CmMessage(int type, int qpn, int psn, int lid, int mtu, byte[] privateData) {
    static final int MAGIC = 0x4744434D;
    static final int VERSION = 1;
    static final int REQ = 1;
    static final int REP = 2;
    static final int RTU = 3;
    static final int REJ = 4;
    static final int DREQ = 5;
    static final int DREP = 6;
    /** IB CM's REQ carries 92 bytes of private data, REP 196; we allow 256. */
    static final int MAX_PRIVATE_DATA = 256;

    static String typeName(final int type) {
        return switch (type) {
            case REQ -> "REQ";
            case REP -> "REP";
            case RTU -> "RTU";
            case REJ -> "REJ";
            case DREQ -> "DREQ";
            case DREP -> "DREP";
            default -> "type " + type;
        };
    }

    void write(final DataOutputStream out) throws IOException {
        out.writeInt(MAGIC);
        out.writeByte(VERSION);
        out.writeByte(type);
        out.writeShort(privateData.length);
        out.writeInt(qpn);
        out.writeInt(psn);
        out.writeShort(lid);
        out.writeShort(0);
        out.writeInt(mtu);
        out.write(privateData);
        out.flush();
    }

    static CmMessage read(final DataInputStream in) throws IOException {
        final int magic;
        try {
            magic = in.readInt();
        } catch (final EOFException e) {
            throw new CmException(CmException.Reason.PROTOCOL, "peer closed the connection", e);
        }
        if (magic != MAGIC) {
            throw new CmException(CmException.Reason.PROTOCOL, "not a gdrkit CM peer (magic 0x"
                + Integer.toHexString(magic) + ")", null);
        }
        final int version = in.readUnsignedByte();
        if (version != VERSION) {
            throw new CmException(CmException.Reason.PROTOCOL, "CM version " + version + ", expected " + VERSION,
                null);
        }
        final int type = in.readUnsignedByte();
        final int len = in.readUnsignedShort();
        if (len > MAX_PRIVATE_DATA) {
            throw new CmException(CmException.Reason.PROTOCOL, "private data of " + len + " bytes", null);
        }
        final int qpn = in.readInt();
        final int psn = in.readInt();
        final int lid = in.readUnsignedShort();
        in.readUnsignedShort();
        final int mtu = in.readInt();
        final byte[] data = new byte[len];
        in.readFully(data);
        return new CmMessage(type, qpn, psn, lid, mtu, data);
    }
}
