/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.comm.transport;

import io.gdrkit.core.mem.DmaMemory;
import java.lang.foreign.MemorySegment;

/**
 * A network transport shaped like NCCL's {@code ncclNet_t} (v8): the one seam between communication code and a
 * network. Nothing above it knows which transport it talks to. Two implementations prove it: {@code IbTransport}
 * (RDMA verbs, any gdrkit provider) and {@code SocketTransport} (TCP sockets).
 *
 * <p>The call pattern NCCL's proxy uses, and every implementation must support:
 * <ol>
 * <li>the receiving side calls {@link #listen} and sends the returned handle (at most
 * {@link #HANDLE_MAXSIZE} bytes) to the sender out of band (the bootstrap);</li>
 * <li>the sender calls {@link #connect} with the handle, the receiver {@link #accept}, both repeatedly: they are
 * non-blocking and return null until the connection is up (NCCL 2.12 and later); neither may wait for the
 * other;</li>
 * <li>each side registers its buffers ({@link #regMr}, {@link #regMrDmaBuf}) against its comm;</li>
 * <li>the receiver posts {@link #irecv}, the sender {@link #isend} (which returns null until the matching receive
 * is posted: the caller retries later, it is not an error); both poll {@link #test};</li>
 * <li>after a receive into GPU memory that the GPU will read, the receiver calls {@link #iflush} and tests
 * its request before releasing the data to the GPU;</li>
 * <li>{@link #deregMr} and {@link #closeSend} / {@link #closeRecv} / {@link #closeListen}.</li>
 * </ol>
 * Requests complete in any order. At most {@link #MAX_REQUESTS} requests are in flight per comm; one more is
 * an INVALID_USAGE error. A comm is used by one thread at a time (NCCL's proxy thread). Errors are
 * {@link NetTransportException}s with NCCL's result classes; a peer is untrusted, so anything it sends that does
 * not fit is a named REMOTE error, and every wait is bounded by the transport's timeout.
 */
public interface NetTransport extends AutoCloseable {
    /** NCCL_NET_HANDLE_MAXSIZE: a listen handle is at most this many bytes. */
    int HANDLE_MAXSIZE = 128;
    /** NCCL_NET_MAX_REQUESTS: requests in flight per comm. */
    int MAX_REQUESTS = 32;

    /** An opaque listening endpoint (ncclNet listenComm). */
    interface ListenComm {
    }

    /** An opaque sending end of a connection (sendComm). */
    interface SendComm {
    }

    /** An opaque receiving end of a connection (recvComm). */
    interface RecvComm {
    }

    /** An opaque memory registration (mhandle). */
    interface MrHandle {
        /** {@return the first address this registration covers} */
        long address();

        /** {@return the length in bytes of the range this registration covers} */
        long length();
    }

    /** An opaque request returned by isend, irecv and iflush; finished once {@link #test} says done. */
    interface Request {
    }

    /** {@return the transport's name for logs ("IB", "Socket"), as ncclNet_t.name} */
    String name();

    /** {@return the number of network devices this transport drives (ncclNet devices())} */
    int devices();

    /**
     * What device {@code dev} offers (getProperties). NCCL uses ptrSupport in its GDR gate, maxRecvs to size
     * grouped receives, speed and latency for its topology, regIsGlobal to cache registrations per device.
     *
     * @param dev the device index, {@code 0..devices()-1}
     * @return the device's properties
     * @throws NetTransportException INVALID_ARGUMENT for a device out of range
     */
    NetProperties getProperties(int dev);

    /**
     * Creates a listening endpoint on {@code dev} and the handle a sender connects with (listen). The handle is
     * opaque to the caller, at most {@link #HANDLE_MAXSIZE} bytes, and travels over the bootstrap; it must carry
     * enough to refuse a handle of another run or transport.
     *
     * @param dev the device to listen on
     * @param handle filled with the handle; must be at least {@link #HANDLE_MAXSIZE} bytes
     * @return the listening endpoint
     */
    ListenComm listen(int dev, byte[] handle);

    /**
     * Starts or continues connecting to the listener named by {@code handle} (connect). Non-blocking: returns
     * null until the connection is established, and the caller calls again with the same handle; then returns the
     * send comm. Must not wait for the peer's accept.
     *
     * @param dev    the local device to connect from
     * @param handle the listener's handle, as {@link #listen} filled it on the receiving side
     * @return the send comm once connected, or null while still connecting
     * @throws NetTransportException INVALID_ARGUMENT for a handle that is not this transport's, REMOTE when the
     *                               listener refuses or vanishes, TIMEOUT past the transport's timeout
     */
    SendComm connect(int dev, byte[] handle);

    /**
     * Starts or continues accepting one connection on {@code listenComm} (accept). Non-blocking like
     * {@link #connect}: null until a sender has connected, then its receive comm.
     *
     * @param listenComm the listening endpoint
     * @return the receive comm once a sender has connected, or null while none has
     */
    RecvComm accept(ListenComm listenComm);

    /**
     * Registers host memory for {@code comm} (a SendComm or RecvComm) (regMr with NCCL_PTR_HOST). With
     * {@link NetProperties#regIsGlobal()} the registration is valid for every comm of the device.
     *
     * @param comm a SendComm or RecvComm of this transport
     * @param host the host memory to register
     * @return the registration, for {@link #isend}, {@link #irecv} and {@link #deregMr}
     */
    MrHandle regMr(Object comm, MemorySegment host);

    /**
     * Registers device memory (NCCL_PTR_CUDA: GPU memory the NIC reaches through peermem, or a simulated GPU's).
     * Allowed only when the device's ptrSupport has CUDA and the control plane's gates decided GDR; else
     * INVALID_USAGE.
     *
     * @param comm   a SendComm or RecvComm of this transport
     * @param device the device memory to register
     * @return the registration, for {@link #isend}, {@link #irecv} and {@link #deregMr}
     */
    MrHandle regMr(Object comm, DmaMemory device);

    /**
     * Registers {@code [offset, offset + length)} of the DMA-BUF behind {@code fd} (regMrDmaBuf), addressed from
     * {@code address}. Allowed only when ptrSupport has DMABUF.
     *
     * @param comm    a SendComm or RecvComm of this transport
     * @param address the address the registered range is used at
     * @param length  the length of the range in bytes
     * @param offset  the range's offset in the DMA-BUF
     * @param fd      the DMA-BUF's file descriptor
     * @return the registration, for {@link #isend}, {@link #irecv} and {@link #deregMr}
     */
    MrHandle regMrDmaBuf(Object comm, long address, long length, long offset, int fd);

    /**
     * Deregisters (deregMr); an unknown or already released handle is INVALID_USAGE.
     *
     * @param comm    the comm the memory was registered against
     * @param mhandle the registration to release
     */
    void deregMr(Object comm, MrHandle mhandle);

    /**
     * Sends {@code size} bytes at {@code data} (inside {@code mhandle}) with {@code tag} (isend). Returns null when
     * the receiver has not posted the matching receive yet: nothing was sent and the caller retries. Otherwise the
     * request, which {@link #test} completes once the data left this buffer (it may be reused).
     *
     * @param comm    the send comm
     * @param data    the address of the data
     * @param size    the number of bytes to send
     * @param tag     the tag the matching receive buffer carries
     * @param mhandle the registration that covers the data
     * @return the request, or null when the receiver has not posted the matching receive yet
     */
    Request isend(SendComm comm, long data, int size, int tag, MrHandle mhandle);

    /**
     * Posts a grouped receive of {@code n} buffers (irecv): buffer i (address, capacity, tag, registration) takes
     * the send with the same tag. {@code n} is at most {@link NetProperties#maxRecvs()}. A send larger than its
     * buffer is a REMOTE error (truncation). The request completes when all {@code n} have landed.
     *
     * @param comm     the receive comm
     * @param n        the number of buffers, 1..{@link NetProperties#maxRecvs()}
     * @param data     each buffer's address
     * @param sizes    each buffer's capacity in bytes
     * @param tags     each buffer's tag
     * @param mhandles each buffer's registration
     * @return the request
     */
    Request irecv(RecvComm comm, int n, long[] data, int[] sizes, int[] tags, MrHandle[] mhandles);

    /**
     * Makes received data visible to the GPU before the caller releases it (iflush): with GDR on a GPU that needs
     * it, a 1-byte RDMA READ through the loopback flush QP; otherwise nothing, and the result is null (NCCL's
     * "no request").
     *
     * @param comm     the receive comm the data arrived on
     * @param n        the number of buffers
     * @param data     each buffer's address
     * @param sizes    each buffer's received size in bytes
     * @param mhandles each buffer's registration
     * @return the flush request, or null when no flush is needed
     */
    Request iflush(RecvComm comm, int n, long[] data, int[] sizes, MrHandle[] mhandles);

    /**
     * Polls {@code request} (test). Returns false while it is in flight; true once done, after which the request
     * must not be tested again. For a receive, {@code sizes} (may be null) gets the bytes received per buffer.
     *
     * @param request the request to poll
     * @param sizes   for a receive, filled with the bytes received per buffer; may be null
     * @return true once the request is done
     * @throws NetTransportException with the error the request ended with
     */
    boolean test(Request request, int[] sizes);

    /**
     * Closes a send comm (closeSend); its in-flight requests are abandoned.
     *
     * @param comm the send comm to close
     */
    void closeSend(SendComm comm);

    /**
     * Closes a receive comm (closeRecv).
     *
     * @param comm the receive comm to close
     */
    void closeRecv(RecvComm comm);

    /**
     * Closes a listening endpoint (closeListen).
     *
     * @param comm the listening endpoint to close
     */
    void closeListen(ListenComm comm);

    /** Releases the transport's devices; every comm must be closed first. */
    @Override
    void close();
}
