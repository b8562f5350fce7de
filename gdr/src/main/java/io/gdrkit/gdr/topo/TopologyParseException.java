/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.topo;

/**
 * A topology source could not be read. The message starts with {@code file:line:} when the line is known.
 */
public final class TopologyParseException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    private final String file;
    private final int line;

    /**
     * @param file    the file (or source name).
     * @param line    1-based line, or 0 when unknown.
     * @param message what is wrong.
     */
    public TopologyParseException(final String file, final int line, final String message)
    {
        this(file, line, message, null);
    }

    /**
     * @param file    the file (or source name).
     * @param line    1-based line, or 0 when unknown.
     * @param message what is wrong.
     * @param cause   the underlying error.
     */
    public TopologyParseException(final String file, final int line, final String message, final Throwable cause)
    {
        super(file + (line > 0 ? ":" + line : "") + ": " + message, cause);
        this.file = file;
        this.line = line;
    }

    /**
     * @return the file or source name.
     */
    public String file()
    {
        return file;
    }

    /**
     * @return the 1-based line, or 0 when unknown.
     */
    public int line()
    {
        return line;
    }
}
