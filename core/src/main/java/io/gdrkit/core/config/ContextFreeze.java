/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.config;

import java.util.Objects;

/**
 * The one freeze guard of every settings Context: after {@code conclude()} a setter throws, and so does a second
 * {@code conclude()}, each with an {@link IllegalStateException} that names the Context and what was refused. A Context
 * holds one and calls {@link #set(String)} first in every setter, {@link #checkConclude()} first in
 * {@code conclude()} and {@link #concluded()} when its values are checked (a failed {@code conclude()} leaves the
 * Context open, so it may be corrected and concluded again).
 *
 * <pre>{@code
 * private final ContextFreeze freeze = new ContextFreeze("CollContext");
 * public CollContext steps(int s) { freeze.set("steps"); this.steps = s; return this; }
 * public CollContext conclude() { freeze.checkConclude(); ...; freeze.concluded(); return this; }
 * }</pre>
 *
 * Code that is handed a Context that may already be concluded asks {@link #isConcluded()} (the Context's own
 * {@code isConcluded()}) instead of concluding it again.
 */
public final class ContextFreeze {
    private final String context;
    private volatile boolean concluded;

    /** @param context the Context's name, as messages show it ({@code CollContext}) */
    public ContextFreeze(final String context) {
        this.context = Objects.requireNonNull(context, "context");
    }

    /**
     * Called first by a setter.
     *
     * @param setter the setter's name
     * @throws IllegalStateException {@code <Context> is concluded: <setter>(...) is refused; configure a new
     *                               <Context>}
     */
    public void set(final String setter) {
        if (concluded) {
            throw new IllegalStateException(context + " is concluded: " + setter + "(...) is refused; configure a new "
                + context);
        }
    }

    /**
     * Called first by {@code conclude()}.
     *
     * @throws IllegalStateException {@code <Context> is already concluded: conclude() runs once per context}
     */
    public void checkConclude() {
        if (concluded) {
            throw new IllegalStateException(context + " is already concluded: conclude() runs once per context");
        }
    }

    /** Called by {@code conclude()} once every value is checked: from now on setters and conclude() throw. */
    public void concluded() {
        concluded = true;
    }

    /** Whether {@link #concluded()} was called. */
    public boolean isConcluded() {
        return concluded;
    }

    /**
     * Called by a getter (or other use) that answers only after {@code conclude()}.
     *
     * @param doing what the caller is about to do ({@code reading its values}, {@code copying it to the ranks})
     * @throws IllegalStateException {@code <Context> is not concluded: conclude() it before <doing>}
     */
    public void requireConcluded(final String doing) {
        if (!concluded) {
            throw new IllegalStateException(context + " is not concluded: conclude() it before " + doing);
        }
    }
}
