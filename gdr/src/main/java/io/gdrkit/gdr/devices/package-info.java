/**
 * The RDMA devices of this host as libibverbs lists them (through FFM), for {@code gdrkit devices}: listing only.
 */
package io.gdrkit.gdr.devices;
