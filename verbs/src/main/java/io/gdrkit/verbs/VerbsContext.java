package io.gdrkit.verbs;

/** A device context (ibv_context). Closing it releases every resource created through it. */
public interface VerbsContext extends AutoCloseable {
    Device device();

    DeviceAttr queryDevice();

    PortAttr queryPort(int port);

    ProtectionDomain allocPd();

    /** Creates a completion queue of at least {@code cqe} entries (ibv_create_cq). */
    CompletionQueue createCq(int cqe);

    /** Returns the next asynchronous event, or null when none is pending (non-blocking ibv_get_async_event). */
    AsyncEvent pollAsyncEvent();

    @Override
    void close();
}
