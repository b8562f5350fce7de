/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.verbs;

/**
 * What a bind grants (ibv_mw_bind with its ibv_mw_bind_info): {@code length} bytes of {@code mr} from {@code addr},
 * with {@code mwAccessFlags} (REMOTE_READ/WRITE/ATOMIC). Length 0 unbinds a type 1 window.
 */
public final class MwBind {
    public long wrId;
    public int sendFlags;
    public MemoryRegion mr;
    public long addr;
    public long length;
    public int mwAccessFlags;

    public MwBind wrId(final long v) {
        wrId = v;
        return this;
    }

    public MwBind flags(final int v) {
        sendFlags = v;
        return this;
    }

    public MwBind range(final MemoryRegion mr, final long addr, final long length, final int mwAccessFlags) {
        this.mr = mr;
        this.addr = addr;
        this.length = length;
        this.mwAccessFlags = mwAccessFlags;
        return this;
    }
}
