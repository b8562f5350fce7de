/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import io.gdrkit.gdr.config.GdrConfiguration;

/**
 * The GDR level: the farthest GPU-NIC path type for which GPUDirect RDMA is used (NCCL_NET_GDR_LEVEL).
 * NCCL 2.30's rule (graph/paths.cc ncclTopoCheckGdr), kept here only: when NCCL_NET_GDR_LEVEL is unset (or a value
 * NCCL does not understand), the level is P2C with NCCL_NET_GDR_C2C=1 (its default) and PXB with
 * NCCL_NET_GDR_C2C=0; see {@link #effective}. Every consumer (the gates, doctor, coll, the NET connector, topo)
 * takes its level from {@link #effective}.
 *
 * <p>Parsing follows NCCL's ncclGetLevel: a path type name from LOC to SYS (case-sensitive, as NCCL compares with
 * strcmp), or an old-style number 0..5 mapped LOC, PIX, PXB, PHB, SYS, SYS (numbers above 5 clamp to SYS, as NCCL
 * clamps). Where NCCL silently falls back to the default for a value it does not understand, gdrkit refuses it with
 * a message, so that a typo can not quietly change the decision.
 *
 * @param path   the level.
 * @param origin where the value came from (e.g. {@code NCCL_NET_GDR_LEVEL=PHB} or {@code default}).
 */
public record GdrLevel(PathType path, String origin)
{
    /** The environment variable NCCL reads. */
    public static final String ENV = GdrConfiguration.NET_GDR_LEVEL_NAME;
    /**
     * NCCL_NET_GDR_LEVEL unset: NCCL's default, still to be resolved against NCCL_NET_GDR_C2C by {@link #effective}
     * (P2C here, NCCL_NET_GDR_C2C's default being 1).
     */
    public static final GdrLevel DEFAULT = new GdrLevel(PathType.P2C, "default");
    /** The level NCCL uses with nothing set: P2C (NCCL_NET_GDR_C2C=1 is the default). */
    public static final GdrLevel NCCL_DEFAULT = effective(DEFAULT, true);

    /**
     * NCCL 2.30's GDR level rule, the one place gdrkit decides it: a level the user set is used as is; with
     * NCCL_NET_GDR_LEVEL unset the level is P2C when NCCL_NET_GDR_C2C is on (its default), PXB when it is off.
     *
     * @param level     the user's level, or {@link #DEFAULT} (or null) for unset.
     * @param netGdrC2c NCCL_NET_GDR_C2C.
     * @return the level NCCL uses; its origin says how it was chosen.
     */
    public static GdrLevel effective(final GdrLevel level, final boolean netGdrC2c)
    {
        if (level != null && !level.isUnset())
        {
            return level;
        }
        return new GdrLevel(netGdrC2c ? PathType.P2C : PathType.PXB,
            "default, " + GdrConfiguration.NET_GDR_C2C_NAME + "=" + (netGdrC2c ? 1 : 0));
    }

    /**
     * @return true for {@link #DEFAULT}: NCCL_NET_GDR_LEVEL unset and not yet resolved by {@link #effective}.
     */
    public boolean isUnset()
    {
        return "default".equals(origin);
    }

    /**
     * @param netGdrC2c NCCL_NET_GDR_C2C.
     * @return what NCCL does with a NCCL_NET_GDR_LEVEL value it does not understand: it ignores it and uses its
     *     default level.
     */
    public static String fallback(final boolean netGdrC2c)
    {
        final String c2c = GdrConfiguration.NET_GDR_C2C_NAME;
        return "NCCL would ignore this value and use its default level, " + (netGdrC2c ?
            "P2C (" + c2c + "=1, its default; PXB with " + c2c + "=0)" : "PXB (" + c2c + "=0)");
    }

    // NCCL paths.cc levelsOldToNew: index = old level number.
    private static final PathType[] OLD_LEVELS =
        { PathType.LOC, PathType.PIX, PathType.PXB, PathType.PHB, PathType.SYS, PathType.SYS };

    /**
     * @param path  a path type (the distance between a GPU and a NIC).
     * @param level the GDR level.
     * @return true when the distance is within the level: {@code path <= level}.
     */
    public static boolean distanceAllows(final PathType path, final PathType level)
    {
        return path.value() <= level.value();
    }

    /**
     * @param path a path type.
     * @return true when this level allows that distance.
     */
    public boolean allows(final PathType path)
    {
        return distanceAllows(path, this.path);
    }

    /**
     * Parse a level value.
     *
     * @param value the text: a name (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS) or an old number 0..5.
     * @param name  the setting's name, for messages (e.g. NCCL_NET_GDR_LEVEL).
     * @return the level.
     * @throws IllegalArgumentException when the value is neither.
     */
    public static GdrLevel parse(final String value, final String name)
    {
        return parse(value, name, ENV.equals(name) ? fallback(true) :
            "NCCL would ignore this value and use its default rule");
    }

    /**
     * Parse a level value.
     *
     * @param value    the text.
     * @param name     the setting's name, for messages.
     * @param fallback what NCCL does with a value it does not understand (for the message).
     * @return the level.
     * @throws IllegalArgumentException when NCCL would not read the value as written.
     */
    public static GdrLevel parse(final String value, final String name, final String fallback)
    {
        if (value == null)
        {
            throw new IllegalArgumentException(name + " has no value");
        }
        final String origin = name + "=" + value;
        for (final PathType type : PathType.values())
        {
            if (type.value() <= PathType.SYS.value() && type.name().equals(value))
            {
                return new GdrLevel(type, origin);
            }
        }
        if (!value.isEmpty() && value.charAt(0) >= '0' && value.charAt(0) <= '9')
        {
            // NCCL: strtol(str, NULL, 0), so 0x.. is hexadecimal and a leading 0 octal.
            final long[] read = strtol0(value);
            final PathType nccl = OLD_LEVELS[(int)Math.min(read[0], OLD_LEVELS.length - 1)];
            if (read[1] == value.length())
            {
                return new GdrLevel(nccl, origin);
            }
            throw new IllegalArgumentException(name + "=\"" + value + "\" is not a GDR level: an old numeric " +
                "level must be a number only. Use a name (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS) or an old " +
                "number 0..5. NCCL would read only its leading number (strtol with base 0: " +
                read[0] + "), that is " + nccl + "; gdrkit refuses the trailing text.");
        }
        final String hint;
        if (value.isBlank())
        {
            hint = "it is empty";
        }
        else if (isName(value.trim().toUpperCase(java.util.Locale.ROOT)))
        {
            hint = "names are case-sensitive and unpadded, as in NCCL; did you mean " +
                value.trim().toUpperCase(java.util.Locale.ROOT) + "?";
        }
        else if (value.trim().equals("NET") || value.trim().equals("DIS"))
        {
            hint = "NET and DIS are path types but not levels (NCCL accepts LOC..SYS)";
        }
        else
        {
            hint = "it is neither a path type name nor an old numeric level";
        }
        throw new IllegalArgumentException(name + "=\"" + value + "\" is not a GDR level: " + hint +
            ". Use a name (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS) or an old number 0..5 " +
            "(0=LOC 1=PIX 2=PXB 3=PHB 4=SYS 5=SYS). " + fallback + ".");
    }

    // C's strtol(s, NULL, 0) on a string starting with a digit: {value (saturated), characters consumed}.
    private static long[] strtol0(final String s)
    {
        int i = 0;
        int base = 10;
        if (s.length() > 1 && s.charAt(0) == '0' && (s.charAt(1) == 'x' || s.charAt(1) == 'X') && s.length() > 2 &&
            Character.digit(s.charAt(2), 16) >= 0)
        {
            base = 16;
            i = 2;
        }
        else if (s.charAt(0) == '0')
        {
            base = 8;
        }
        long v = 0;
        for (; i < s.length(); i++)
        {
            final int d = Character.digit(s.charAt(i), base);
            if (d < 0 || s.charAt(i) > 127)
            {
                break;
            }
            v = v > (Long.MAX_VALUE - d) / base ? Long.MAX_VALUE : v * base + d;
        }
        return new long[] { v, i };
    }

    private static boolean isName(final String value)
    {
        for (final PathType type : PathType.values())
        {
            if (type.value() <= PathType.SYS.value() && type.name().equals(value))
            {
                return true;
            }
        }
        return false;
    }

    @Override
    public String toString()
    {
        return path + " (" + origin + ")";
    }
}
