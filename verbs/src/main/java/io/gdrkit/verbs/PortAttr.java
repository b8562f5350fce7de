/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * Port attributes (ibv_port_attr, from {@link VerbsContext#queryPort(int)}), libibverbs' field names in camelCase.
 *
 * @param state       an ibv_port_state: {@link #PORT_ACTIVE} (4) when the port carries traffic
 * @param maxMtu      ibv_mtu enum
 * @param activeMtu   ibv_mtu enum
 * @param lid         the port's LID, which peers put in their address vector
 * @param linkLayer   "InfiniBand", "Ethernet", or "software" for a software fabric
 * @param gidTblLen   entries in the GID table
 * @param portCapFlags ibv_port_cap_flags bits
 * @param maxMsgSz    largest message in bytes
 * @param pkeyTblLen  entries in the P_Key table
 * @param smLid       the subnet manager's LID (0: none)
 * @param lmc         LID mask control
 * @param physState   ibv_port_phys_state: {@link #PHYS_LINK_UP} (5), or {@link #PHYS_POLLING} (2) while the link is
 *                    down and the port waits for a partner
 */
public record PortAttr(int state, int maxMtu, int activeMtu, int lid, String linkLayer, int gidTblLen,
                       int portCapFlags, long maxMsgSz, int pkeyTblLen, int smLid, int lmc, int physState) {
    public static final int PORT_DOWN = 1;
    public static final int PORT_ACTIVE = 4;
    public static final int PHYS_POLLING = 2;
    public static final int PHYS_LINK_UP = 5;

    /** The attributes callers had before the full set: state, MTUs, LID and link layer. */
    public PortAttr(final int state, final int maxMtu, final int activeMtu, final int lid, final String linkLayer) {
        this(state, maxMtu, activeMtu, lid, linkLayer, 1, 0, 1L << 31, 1, 0, 0, PHYS_LINK_UP);
    }
}
