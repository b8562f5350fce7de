package io.gdrkit.verbs;

import java.util.List;

/**
 * A verbs provider (like an rdma-core provider library): the software NIC today, a native libibverbs
 * provider later. Providers are found with {@link java.util.ServiceLoader}.
 */
public interface VerbsProvider {
    String name();

    /** The devices this provider currently exposes; empty when it found none (never invented). */
    List<Device> devices();
}
