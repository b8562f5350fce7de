/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs.cm;

import io.gdrkit.verbs.Mtu;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;

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
 *  |      authenticator: HMAC-SHA256(token, nonce || bytes 0..23    | 24
 *  |      || private data), zeros without a token (32 bytes)       |
 *  +---------------------------------------------------------------+
 *  |                     private data ...                          | 56
 * </pre>
 * The listener opens with CHAL (a 16-byte nonce as private data). REQ and REP carry the sender's QP; RTU
 * confirms; REJ carries a reason as private data; DREQ/DREP disconnect; INFO asks for (and answers with) the
 * listener's service information (a shared-memory directory name, for instance). REQ and INFO carry the
 * authenticator over the listener's nonce.
 *
 * <p>Every field is checked against its documented range when read ({@link #read}): a violation is a
 * {@link CmException.Reason#PROTOCOL} error naming the field, and the caller closes that connection only.
 */
record CmMessage(int type, int qpn, int psn, int lid, int mtu, byte[] privateData, byte[] auth) {
    static final int MAGIC = 0x4744434D;
    static final int VERSION = 2;
    static final int REQ = 1;
    static final int REP = 2;
    static final int RTU = 3;
    static final int REJ = 4;
    static final int DREQ = 5;
    static final int DREP = 6;
    static final int CHAL = 7;
    static final int INFO = 8;
    static final int HEADER = 24;
    static final int AUTH = 32;
    /** IB CM's REQ carries 92 bytes of private data, REP 196; we allow 256. */
    static final int MAX_PRIVATE_DATA = 256;
    /** Highest unicast LID (IB: 0x0001..0xBFFF). */
    static final int MAX_LID = 0xBFFF;
    /** QP numbers are 24 bits; 0 and 1 are the special QPs. */
    static final int MAX_QPN = 0xFFFFFF;

    CmMessage(final int type, final int qpn, final int psn, final int lid, final int mtu, final byte[] privateData) {
        this(type, qpn, psn, lid, mtu, privateData, new byte[AUTH]);
    }

    static String typeName(final int type) {
        return switch (type) {
            case REQ -> "REQ";
            case REP -> "REP";
            case RTU -> "RTU";
            case REJ -> "REJ";
            case DREQ -> "DREQ";
            case DREP -> "DREP";
            case CHAL -> "CHAL";
            case INFO -> "INFO";
            default -> "type " + type;
        };
    }

    /** The bytes the authenticator covers besides the nonce: the header's first 24 bytes. */
    byte[] header() {
        return ByteBuffer.allocate(HEADER).putInt(MAGIC).put((byte) VERSION).put((byte) type)
            .putShort((short) privateData.length).putInt(qpn).putInt(psn).putShort((short) lid).putShort((short) 0)
            .putInt(mtu).array();
    }

    /** This message with its authenticator computed over {@code nonce}. */
    CmMessage signed(final io.gdrkit.core.auth.Token token, final byte[] nonce) {
        return new CmMessage(type, qpn, psn, lid, mtu, privateData, token.answer(nonce, header(), privateData));
    }

    boolean verify(final io.gdrkit.core.auth.Token token, final byte[] nonce) {
        return token.verify(auth, nonce, header(), privateData);
    }

    void write(final DataOutputStream out) throws IOException {
        out.write(header());
        out.write(auth);
        out.write(privateData);
        out.flush();
    }

    /** Reads and validates one message; throws PROTOCOL naming the first field out of range. */
    static CmMessage read(final DataInputStream in) throws IOException {
        final int magic;
        try {
            magic = in.readInt();
        } catch (final EOFException e) {
            throw new CmException(CmException.Reason.PROTOCOL, "peer closed the connection", e);
        }
        try {
            if (magic != MAGIC) {
                throw protocol("not a gdrkit CM peer (magic 0x" + Integer.toHexString(magic) + ")");
            }
            final int version = in.readUnsignedByte();
            if (version != VERSION) {
                throw protocol("CM version " + version + ", expected " + VERSION);
            }
            final int type = in.readUnsignedByte();
            if (type < REQ || type > INFO) {
                throw protocol("unknown CM message type " + type);
            }
            final int len = in.readUnsignedShort();
            if (len > MAX_PRIVATE_DATA) {
                throw protocol(typeName(type) + " with private data of " + len + " bytes (limit "
                    + MAX_PRIVATE_DATA + ")");
            }
            final int qpn = in.readInt();
            final int psn = in.readInt();
            final int lid = in.readUnsignedShort();
            in.readUnsignedShort();
            final int mtu = in.readInt();
            final byte[] auth = new byte[AUTH];
            in.readFully(auth);
            final byte[] data = new byte[len];
            in.readFully(data);
            if (type == REQ || type == REP) {
                if (qpn < 2 || qpn > MAX_QPN) {
                    throw protocol(typeName(type) + " names QP number " + qpn + " (valid: 2.." + MAX_QPN + ")");
                }
                if (lid < 1 || lid > MAX_LID) {
                    throw protocol(typeName(type) + " names LID " + lid + " (valid: 1..0x"
                        + Integer.toHexString(MAX_LID) + ")");
                }
                if ((psn & ~0xFFFFFF) != 0) {
                    throw protocol(typeName(type) + " with start PSN 0x" + Integer.toHexString(psn)
                        + " (24 bits)");
                }
                if (mtu < Mtu.toBytes(Mtu.MTU_256) || mtu > Mtu.MAX_SOFTWARE_BYTES || Integer.bitCount(mtu) != 1) {
                    throw protocol(typeName(type) + " with path MTU " + mtu + " (valid: a power of two from 256 to "
                        + Mtu.MAX_SOFTWARE_BYTES + ")");
                }
            }
            if (type == CHAL && len != io.gdrkit.core.auth.Token.NONCE_LENGTH) {
                throw protocol("CHAL with a nonce of " + len + " bytes");
            }
            return new CmMessage(type, qpn, psn, lid, mtu, data, auth);
        } catch (final EOFException e) {
            throw new CmException(CmException.Reason.PROTOCOL, "peer closed the connection mid-message", e);
        }
    }

    private static CmException protocol(final String what) {
        return new CmException(CmException.Reason.PROTOCOL, what, null);
    }
}
