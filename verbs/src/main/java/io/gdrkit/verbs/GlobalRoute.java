/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

import io.gdrkit.core.Errno;
import java.util.HexFormat;

/**
 * The global route of an address vector ({@code struct ibv_global_route}, the GRH a packet carries when
 * {@code is_global} is set): needed on RoCE, where the Ethernet link routes by GID and LIDs do not exist, and across
 * IB subnets. Field ranges follow the IB spec's GRH (IBA 8.3): a 20-bit flow label, 8-bit hop limit and traffic
 * class; the SGID index selects an entry of the local port's GID table.
 */
public final class GlobalRoute {
    /** The destination GID, 16 bytes in network order (as {@code ibv_query_gid} returns them). */
    public final byte[] dgid = new byte[16];
    public int flowLabel;
    public int sgidIndex;
    public int hopLimit;
    public int trafficClass;

    /** Copies {@code gid} (16 bytes) into {@link #dgid}. */
    public GlobalRoute dgid(final byte[] gid) {
        if (gid == null || gid.length != 16) {
            throw new VerbsException(Errno.EINVAL, "grh.dgid must be 16 bytes, not " + (gid == null ? "null"
                : gid.length));
        }
        System.arraycopy(gid, 0, dgid, 0, 16);
        return this;
    }

    public GlobalRoute flowLabel(final int v) {
        flowLabel = v;
        return this;
    }

    public GlobalRoute sgidIndex(final int v) {
        sgidIndex = v;
        return this;
    }

    public GlobalRoute hopLimit(final int v) {
        hopLimit = v;
        return this;
    }

    public GlobalRoute trafficClass(final int v) {
        trafficClass = v;
        return this;
    }

    /**
     * Checks the ranges the GRH's fields have on the wire.
     *
     * @param gidTblLen the local port's GID table length ({@code sgid_index} must index it)
     * @throws VerbsException EINVAL naming the field, its value and its range
     */
    public void validate(final String where, final int gidTblLen) {
        if (flowLabel < 0 || flowLabel > 0xFFFFF) {
            bad(where, "flow_label", flowLabel, "0..0xFFFFF (20 bits)");
        }
        if (hopLimit < 0 || hopLimit > 255) {
            bad(where, "hop_limit", hopLimit, "0..255");
        }
        if (trafficClass < 0 || trafficClass > 255) {
            bad(where, "traffic_class", trafficClass, "0..255");
        }
        if (sgidIndex < 0 || sgidIndex >= gidTblLen) {
            bad(where, "sgid_index", sgidIndex, "0.." + (gidTblLen - 1) + " (the port's GID table has " + gidTblLen
                + " entr" + (gidTblLen == 1 ? "y" : "ies") + ")");
        }
        boolean zero = true;
        for (final byte b : dgid) {
            zero &= b == 0;
        }
        if (zero) {
            throw new VerbsException(Errno.EINVAL, where + ": grh.dgid is all zeros (no destination GID)");
        }
    }

    private static void bad(final String where, final String field, final int v, final String range) {
        throw new VerbsException(Errno.EINVAL, where + ": grh." + field + " = " + v + " is out of range (" + range
            + ")");
    }

    /** Copies every field from {@code o}. */
    public GlobalRoute set(final GlobalRoute o) {
        System.arraycopy(o.dgid, 0, dgid, 0, 16);
        flowLabel = o.flowLabel;
        sgidIndex = o.sgidIndex;
        hopLimit = o.hopLimit;
        trafficClass = o.trafficClass;
        return this;
    }

    @Override
    public String toString() {
        return "grh{dgid=" + HexFormat.of().formatHex(dgid) + ", flow_label=" + flowLabel + ", sgid_index="
            + sgidIndex + ", hop_limit=" + hopLimit + ", traffic_class=" + trafficClass + '}';
    }
}
