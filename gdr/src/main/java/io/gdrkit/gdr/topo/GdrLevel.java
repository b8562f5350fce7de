/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

/**
 * The GDR level: the farthest GPU-NIC path type for which GPUDirect RDMA is used (NCCL_NET_GDR_LEVEL).
 * The default is PXB, as in NCCL's ncclTopoCheckGdr.
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
    public static final String ENV = io.gdrkit.gdr.config.GdrConfiguration.NET_GDR_LEVEL_NAME;
    /** NCCL's default level, PXB. */
    public static final GdrLevel DEFAULT = new GdrLevel(PathType.PXB, "default");

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
        if (!value.isEmpty() && value.chars().allMatch(c -> c >= '0' && c <= '9'))
        {
            long old;
            try
            {
                old = Long.parseLong(value);
            }
            catch (final NumberFormatException ex)
            {
                old = Long.MAX_VALUE;
            }
            return new GdrLevel(OLD_LEVELS[(int)Math.min(old, OLD_LEVELS.length - 1)], origin);
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
        else if (Character.isDigit(value.charAt(0)))
        {
            hint = "an old numeric level must be decimal digits only";
        }
        else
        {
            hint = "it is neither a path type name nor an old numeric level";
        }
        throw new IllegalArgumentException(name + "=\"" + value + "\" is not a GDR level: " + hint +
            ". Use a name (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS) or an old number 0..5 " +
            "(0=LOC 1=PIX 2=PXB 3=PHB 4=SYS 5=SYS). " + (!value.isEmpty() && Character.isDigit(value.charAt(0)) ?
            "NCCL would read only its leading number (strtol); gdrkit refuses the trailing text." :
            "NCCL would ignore this value and use PXB."));
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
