/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * ibv_post_send/ibv_post_recv failed: {@link #badWrIndex()} is the position in the chain of the first work
 * request that was not posted (the ones before it were posted), like libibverbs' {@code bad_wr}.
 */
public final class PostException extends VerbsException {
    private static final long serialVersionUID = 1L;
    private final int badWrIndex;

    public PostException(final int errno, final int badWrIndex, final String message) {
        super(errno, "work request #" + badWrIndex + " of the chain: " + message);
        this.badWrIndex = badWrIndex;
    }

    public int badWrIndex() {
        return badWrIndex;
    }
}
