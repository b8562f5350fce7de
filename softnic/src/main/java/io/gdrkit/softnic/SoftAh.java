/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.softnic;

import io.gdrkit.core.Errno;
import io.gdrkit.verbs.AddressHandle;
import io.gdrkit.verbs.AhAttr;
import io.gdrkit.verbs.VerbsException;

/** An address handle of the software NIC: a destination LID (the fabrics route on LIDs; no GRH). */
final class SoftAh implements AddressHandle {
    /** LIDs from here up are multicast (IB spec 4.1.2); the software NIC has no multicast. */
    static final int MULTICAST_LID_BASE = 0xC000;

    final SoftPd pd;
    final int dlid;
    private final AhAttr attr;
    volatile boolean closed;

    private SoftAh(final SoftPd pd, final AhAttr attr) {
        this.pd = pd;
        this.dlid = attr.dlid;
        this.attr = new AhAttr().dlid(attr.dlid).sl(attr.sl).portNum(attr.portNum);
        this.attr.srcPathBits = attr.srcPathBits;
    }

    static SoftAh create(final SoftPd pd, final AhAttr attr) {
        if (attr == null) {
            throw new VerbsException(Errno.EINVAL, "ibv_create_ah: no attributes");
        }
        if (attr.isGlobal) {
            attr.grh.validate("ibv_create_ah", SoftDevice.GID_TABLE_LENGTH); // a bad GRH is EINVAL, as on a NIC
            throw new VerbsException(Errno.EOPNOTSUPP, "ibv_create_ah: a GRH (is_global) is not supported; the "
                + "software fabrics carry no GRH, so a UD receiver could not be given one (IBV_WC_GRH)");
        }
        if (attr.portNum != 1) {
            throw new VerbsException(Errno.EINVAL, "ibv_create_ah: port " + attr.portNum + " (the device has port 1)");
        }
        if (attr.dlid <= 0 || attr.dlid >= MULTICAST_LID_BASE) {
            throw new VerbsException(Errno.EINVAL, "ibv_create_ah: dlid " + attr.dlid + " is not a unicast LID "
                + "(1..0xBFFF)");
        }
        if (attr.sl < 0 || attr.sl > 15) {
            throw new VerbsException(Errno.EINVAL, "ibv_create_ah: sl " + attr.sl + " outside 0..15");
        }
        return new SoftAh(pd, attr);
    }

    @Override
    public AhAttr attr() {
        return attr;
    }

    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return "AH{dlid=" + dlid + '}';
    }
}
