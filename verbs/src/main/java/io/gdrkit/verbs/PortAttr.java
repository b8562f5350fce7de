package io.gdrkit.verbs;

/**
 * Port attributes (a subset of ibv_port_attr).
 *
 * @param state     4 = ACTIVE as in ibv_port_state
 * @param maxMtu    ibv_mtu enum
 * @param activeMtu ibv_mtu enum
 * @param lid       the port's LID, which peers put in their address vector
 */
public record PortAttr(int state, int maxMtu, int activeMtu, int lid, String linkLayer) {
    public static final int PORT_ACTIVE = 4;
}
