/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * Address handle attributes (ibv_ah_attr): the destination LID, the service level, the port and, with
 * {@link #isGlobal}, a global route ({@link #grh}). The software NIC refuses a GRH on an address handle (its fabrics
 * carry no GRH, so a receiver could not be handed one); the native provider passes it to libibverbs.
 */
public final class AhAttr {
    public int dlid;
    public int sl;
    public int srcPathBits;
    public int portNum = 1;
    public boolean isGlobal;
    /** Read only when {@link #isGlobal}. */
    public final GlobalRoute grh = new GlobalRoute();

    public AhAttr dlid(final int v) {
        dlid = v;
        return this;
    }

    public AhAttr sl(final int v) {
        sl = v;
        return this;
    }

    public AhAttr portNum(final int v) {
        portNum = v;
        return this;
    }

    public AhAttr isGlobal(final boolean v) {
        isGlobal = v;
        return this;
    }

    /** Sets is_global and copies {@code route} into {@link #grh}. */
    public AhAttr grh(final GlobalRoute route) {
        isGlobal = true;
        grh.set(route);
        return this;
    }

    @Override
    public String toString() {
        return "AhAttr{dlid=" + dlid + ", sl=" + sl + ", port=" + portNum + (isGlobal ? ", " + grh : "") + '}';
    }
}
