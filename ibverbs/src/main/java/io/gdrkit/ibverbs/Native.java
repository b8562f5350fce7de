/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

/** Calls into libibverbs and turns a Throwable from invokeExact into an unchecked one. */
final class Native {
    private Native() {
    }

    @FunctionalInterface
    interface Call<T> {
        T call() throws Throwable;
    }

    static <T> T call(final Call<T> c) {
        try {
            return c.call();
        } catch (final RuntimeException | Error e) {
            throw e;
        } catch (final Throwable t) {
            throw new IllegalStateException("native call failed: " + t, t);
        }
    }

    /** Checks a libibverbs return value that is an errno (0 on success) or -1 with errno. */
    static void check(final String call, final int rc) {
        if (rc != 0) {
            throw IbvLibrary.error(call, rc < 0 ? -rc : rc);
        }
    }
}
