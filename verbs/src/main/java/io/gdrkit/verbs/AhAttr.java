package io.gdrkit.verbs;

/**
 * Address handle attributes (ibv_ah_attr), reduced to what the software fabrics route on: the destination LID, the
 * service level and the port. A GRH ({@link #isGlobal}) is not supported: LIDs route every packet.
 */
public final class AhAttr {
    public int dlid;
    public int sl;
    public int srcPathBits;
    public int portNum = 1;
    public boolean isGlobal;

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

    @Override
    public String toString() {
        return "AhAttr{dlid=" + dlid + ", sl=" + sl + ", port=" + portNum + (isGlobal ? ", global" : "") + '}';
    }
}
