package io.gdrkit.core.agent;

import java.util.List;

/** Steps several agents in a fixed order as one. */
public final class CompositeAgent implements Agent {
    private final Agent[] agents;
    private final String roleName;

    public CompositeAgent(final String roleName, final List<? extends Agent> agents) {
        this.agents = agents.toArray(new Agent[0]);
        this.roleName = roleName;
    }

    @Override
    public int doWork() {
        int work = 0;
        for (final Agent a : agents) {
            work += a.doWork();
        }
        return work;
    }

    @Override
    public String roleName() {
        return roleName;
    }

    @Override
    public void onClose() {
        for (final Agent a : agents) {
            a.onClose();
        }
    }
}
