package io.gdrkit.verbs;

/** A verbs call failed; carries the errno that libibverbs would have returned and a message naming the cause. */
public class VerbsException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int errno;

    public VerbsException(final int errno, final String message) {
        super(Errno.name(errno) + ": " + message);
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
