/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Reads a topology input file as text, refusing what is not a text file with a one-line reason.
 */
final class TopoFiles
{
    /** Largest topology input read, bytes: a 10,000-NIC NCCL topology file is about 2 MiB. */
    static final long MAX_FILE_BYTES = 32L << 20;

    private TopoFiles()
    {
    }

    /**
     * @param file the file.
     * @return its text.
     * @throws TopologyReadException when it is missing, unreadable, a directory, too large, binary or not UTF-8.
     */
    static String readText(final Path file) throws TopologyReadException
    {
        final String name = file.toString();
        if (Files.isDirectory(file))
        {
            throw new TopologyReadException(name, "it is a directory, not a file");
        }
        final byte[] bytes;
        try (InputStream in = Files.newInputStream(file))
        {
            bytes = in.readNBytes((int)MAX_FILE_BYTES + 1);
        }
        catch (final NoSuchFileException ex)
        {
            throw new TopologyReadException(name, "no such file");
        }
        catch (final AccessDeniedException ex)
        {
            throw new TopologyReadException(name, "permission denied");
        }
        catch (final IOException ex)
        {
            throw new TopologyReadException(name, ex.getMessage() == null ? "read failed" : ex.getMessage());
        }
        if (bytes.length > MAX_FILE_BYTES)
        {
            throw new TopologyReadException(name, "larger than the " + (MAX_FILE_BYTES >> 20) +
                " MiB cap on topology inputs (docs/TOPOLOGY.md)");
        }
        for (int i = 0; i < bytes.length; i++)
        {
            if (bytes[i] == 0)
            {
                throw new TopologyReadException(name, "binary content (a NUL byte at offset " + i +
                    "), not a topology text file");
            }
        }
        try
        {
            return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(bytes)).toString();
        }
        catch (final CharacterCodingException ex)
        {
            throw new TopologyReadException(name, "not UTF-8 text (binary or another encoding)");
        }
    }
}
