/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

import java.io.IOException;

/**
 * A topology input could not be read at all: missing, unreadable, a directory, binary, not UTF-8 text, or over
 * the size cap. The message is one line, {@code cannot read FILE: reason}.
 */
public final class TopologyReadException extends IOException
{
    private static final long serialVersionUID = 1L;

    private final String file;
    private final String reason;

    /**
     * @param file   the file as the user named it.
     * @param reason why it could not be read, in words (no exception class names).
     */
    public TopologyReadException(final String file, final String reason)
    {
        super("cannot read " + file + ": " + reason);
        this.file = file;
        this.reason = reason;
    }

    /**
     * @return the file as the user named it.
     */
    public String file()
    {
        return file;
    }

    /**
     * @return why it could not be read.
     */
    public String reason()
    {
        return reason;
    }
}
