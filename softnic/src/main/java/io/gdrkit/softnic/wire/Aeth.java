/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic.wire;

/**
 * AETH syndrome encoding (IB spec vol. 1, 9.7.5.1): bits 7..5 select ACK (000), RNR NAK (001) or NAK (011);
 * bits 4..0 carry the credit count, the RNR timer code or the NAK code.
 */
public final class Aeth {
    public static final int ACK = 0x00;
    public static final int RNR_NAK = 0x20;
    public static final int NAK = 0x60;
    public static final int TYPE_MASK = 0xE0;
    public static final int VALUE_MASK = 0x1F;

    /** Credit count 0x1F: the responder does not use end-to-end credits. */
    public static final int ACK_UNLIMITED = ACK | 0x1F;

    public static final int NAK_PSN_SEQ_ERROR = 0;
    public static final int NAK_INVALID_REQUEST = 1;
    public static final int NAK_REMOTE_ACCESS_ERROR = 2;
    public static final int NAK_REMOTE_OPERATIONAL_ERROR = 3;
    public static final int NAK_INVALID_RD_REQUEST = 4;

    private Aeth() {
    }

    public static int nak(final int code) {
        return NAK | code;
    }

    public static int rnrNak(final int timerCode) {
        return RNR_NAK | (timerCode & VALUE_MASK);
    }

    public static String describe(final int syndrome) {
        return switch (syndrome & TYPE_MASK) {
            case ACK -> "ACK";
            case RNR_NAK -> "RNR_NAK(timer=" + (syndrome & VALUE_MASK) + ")";
            case NAK -> switch (syndrome & VALUE_MASK) {
                case NAK_PSN_SEQ_ERROR -> "NAK(PSN sequence error)";
                case NAK_INVALID_REQUEST -> "NAK(invalid request)";
                case NAK_REMOTE_ACCESS_ERROR -> "NAK(remote access error)";
                case NAK_REMOTE_OPERATIONAL_ERROR -> "NAK(remote operational error)";
                case NAK_INVALID_RD_REQUEST -> "NAK(invalid RD request)";
                default -> "NAK(code " + (syndrome & VALUE_MASK) + ")";
            };
            default -> "reserved syndrome 0x" + Integer.toHexString(syndrome);
        };
    }
}
