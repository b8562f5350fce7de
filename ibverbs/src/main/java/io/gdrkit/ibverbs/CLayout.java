/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.SequenceLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.UnionLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * C struct layouts for FFM with the System V x86-64 rules applied (each member at its natural alignment, the
 * struct padded to its largest alignment), so a layout reads like the header it mirrors. A member named with a
 * leading '$' is an anonymous union or struct: its members are addressed as if they were the parent's, as in C.
 */
final class CLayout {
    private CLayout() {
    }

    /** A struct with C padding inserted. */
    static StructLayout struct(final String name, final MemoryLayout... members) {
        final List<MemoryLayout> out = new ArrayList<>();
        long offset = 0;
        long align = 1;
        int pad = 0;
        for (final MemoryLayout m : members) {
            final long a = m.byteAlignment();
            align = Math.max(align, a);
            final long aligned = (offset + a - 1) / a * a;
            if (aligned > offset) {
                out.add(MemoryLayout.paddingLayout(aligned - offset).withName("pad" + pad++));
            }
            out.add(m);
            offset = aligned + m.byteSize();
        }
        final long size = (offset + align - 1) / align * align;
        if (size > offset) {
            out.add(MemoryLayout.paddingLayout(size - offset).withName("pad" + pad));
        }
        return MemoryLayout.structLayout(out.toArray(MemoryLayout[]::new)).withName(name);
    }

    /** A union padded to its largest alignment. */
    static UnionLayout union(final String name, final MemoryLayout... members) {
        return MemoryLayout.unionLayout(members).withName(name);
    }

    /** An opaque run of bytes with an alignment ({@code pthread_mutex_t}, {@code char[64]}). */
    static MemoryLayout opaque(final String name, final long bytes, final long alignment) {
        return MemoryLayout.sequenceLayout(bytes / alignment, alignment == 8
            ? java.lang.foreign.ValueLayout.JAVA_LONG : alignment == 4 ? java.lang.foreign.ValueLayout.JAVA_INT
            : java.lang.foreign.ValueLayout.JAVA_BYTE).withName(name);
    }

    /**
     * Every named member's offset as {@code struct.member.sub}, and {@code struct.sizeof}, in the form the ABI probe
     * (src/test/c/abi_probe.c) prints.
     */
    static Map<String, Long> describe(final GroupLayout layout) {
        final Map<String, Long> out = new LinkedHashMap<>();
        final String root = layout.name().orElseThrow();
        out.put(root + ".sizeof", layout.byteSize());
        walk(layout, root, 0, out);
        return out;
    }

    private static void walk(final GroupLayout g, final String prefix, final long base, final Map<String, Long> out) {
        long offset = 0;
        for (final MemoryLayout m : g.memberLayouts()) {
            final long at = base + (g instanceof UnionLayout ? 0 : offset);
            final String name = m.name().orElse("");
            if (!name.startsWith("pad") && !name.isEmpty()) {
                final boolean anonymous = name.startsWith("$");
                final String path = anonymous ? prefix : prefix + "." + name;
                if (!anonymous) {
                    out.put(path, at);
                }
                if (m instanceof GroupLayout sub) {
                    walk(sub, path, at, out);
                }
            }
            if (!(m instanceof SequenceLayout) || true) {
                offset += m.byteSize();
            }
        }
    }
}
