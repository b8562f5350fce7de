/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

final class TopoFixtures
{
    private TopoFixtures()
    {
    }

    static String text(final String name)
    {
        try (InputStream in = TopoFixtures.class.getResourceAsStream("/topo/" + name))
        {
            if (in == null)
            {
                throw new IllegalStateException("missing fixture /topo/" + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    static TopoSystem xml(final String name)
    {
        return NcclTopoXmlReader.parse(text(name), name);
    }

    static TopoSystem smi(final String name)
    {
        return NvidiaSmiTopoReader.parse(text(name), name);
    }
}
