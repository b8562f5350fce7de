/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.util.ArrayList;
import java.util.List;

/**
 * NCCL_IB_HCA as NCCL 2.30 reads it (transport/net_ib/init.cc with misc/utils.cc parseStringList and matchIfList):
 * which IB devices and ports the IB transport uses. A leading {@code ^} excludes the listed devices instead of
 * selecting them; then a leading {@code =} matches names exactly instead of as prefixes ({@code mlx5} selects
 * mlx5_0, mlx5_1, ...). Entries are separated by commas, each {@code name[:port[:rail[:plane]]]}; a missing or
 * empty port matches every port, and a port is read with C's atoi (text that is not a number reads as 0, which no
 * port has). Empty entries are skipped, at most 32 entries are read (MAX_IB_DEVS). An empty list selects every
 * device, so {@code ^} alone excludes every device, as in NCCL.
 *
 * @param raw     the value as given, or null when unset.
 * @param exclude {@code ^}: the list names devices to leave out.
 * @param exact   {@code =}: names match exactly, not as prefixes.
 * @param entries the parsed entries.
 */
public record IbHcaFilter(String raw, boolean exclude, boolean exact, List<Entry> entries)
{
    /** The environment variable. */
    public static final String ENV = io.gdrkit.gdr.config.GdrConfiguration.IB_HCA_NAME;
    /** Unset: every device and port. */
    public static final IbHcaFilter ALL = new IbHcaFilter(null, false, false, List.of());
    /** NCCL's MAX_IB_DEVS: entries past this many are ignored. */
    public static final int MAX_ENTRIES = 32;

    /**
     * One entry.
     *
     * @param prefix the device name (or its prefix).
     * @param port   the port, or -1 for every port.
     */
    public record Entry(String prefix, int port)
    {
    }

    /**
     * @param value the NCCL_IB_HCA value, or null when unset.
     * @return the filter.
     */
    public static IbHcaFilter parse(final String value)
    {
        if (value == null)
        {
            return ALL;
        }
        String v = value;
        final boolean not = v.startsWith("^");
        if (not)
        {
            v = v.substring(1);
        }
        final boolean exact = v.startsWith("=");
        if (exact)
        {
            v = v.substring(1);
        }
        final List<Entry> entries = new ArrayList<>();
        for (final String entry : v.split(",", -1))
        {
            if (entries.size() == MAX_ENTRIES)
            {
                break;
            }
            final String[] parts = entry.split(":", -1);
            if (parts[0].isEmpty())
            {
                continue;
            }
            final int port = parts.length > 1 && !parts[1].isEmpty() ? atoi(parts[1]) : -1;
            entries.add(new Entry(parts[0], port));
        }
        return new IbHcaFilter(value, not, exact, List.copyOf(entries));
    }

    // C's atoi: optional blanks and sign, then decimal digits; 0 when none.
    private static int atoi(final String s)
    {
        int i = 0;
        while (i < s.length() && Character.isWhitespace(s.charAt(i)))
        {
            i++;
        }
        boolean neg = false;
        if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-'))
        {
            neg = s.charAt(i) == '-';
            i++;
        }
        long n = 0;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9' && n < Integer.MAX_VALUE)
        {
            n = n * 10 + (s.charAt(i++) - '0');
        }
        return (int)Math.min(Integer.MAX_VALUE, neg ? -n : n);
    }

    /**
     * @return true when the filter selects every device (unset, or an empty list without {@code ^}).
     */
    public boolean selectsAll()
    {
        return entries.isEmpty() && !exclude;
    }

    /**
     * NCCL's test: {@code matchIfList(name, port, list, exact) ^ exclude}.
     *
     * @param name a device name (mlx5_0).
     * @param port its port (1-based), or -1 when the source does not give it.
     * @return true when NCCL's IB transport would use this device and port.
     */
    public boolean accepts(final String name, final int port)
    {
        boolean match = entries.isEmpty();
        for (final Entry e : entries)
        {
            final boolean nameMatch = exact ? name.equals(e.prefix()) : name.startsWith(e.prefix());
            if (nameMatch && (port == -1 || e.port() == -1 || port == e.port()))
            {
                match = true;
                break;
            }
        }
        return match ^ exclude;
    }

    /**
     * @param nic a NIC of a topology.
     * @return true when NCCL would use it; a NIC without a device name (a bare PCI NIC, named by its bus id) is
     *     accepted, since NCCL would match the name its plugin gives it.
     */
    public boolean accepts(final TopoNode nic)
    {
        if (selectsAll() || nic.attributes().containsKey("#bare"))
        {
            return true;
        }
        return accepts(nic.id(), nic.attributes().containsKey("port") ? nic.intAttribute("port", -1) : -1);
    }

    /**
     * @return the reason a device is left out, for messages.
     */
    public String describe()
    {
        return ENV + "=" + raw + " (" + (exclude ? "excludes" : "selects") + " " + (exact ? "exactly " : "by prefix ") +
            (entries.isEmpty() ? "nothing listed" : String.join(",", entries.stream()
                .map(e -> e.prefix() + (e.port() >= 0 ? ":" + e.port() : "")).toList())) + ")";
    }

    @Override
    public String toString()
    {
        return raw == null ? "unset" : raw;
    }
}
