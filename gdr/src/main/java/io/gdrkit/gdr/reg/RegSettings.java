/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gdr.reg;

/**
 * The registration settings of a communicator. Read from the environment only by
 * {@code io.gdrkit.gdr.gate.NcclSettings#reg()}, which records NCCL_LOCAL_REGISTER's source.
 *
 * @param localRegister register user buffers at all (NCCL_LOCAL_REGISTER, default 1); when off,
 *                      {@link CommRegistrationCache#register(long, long)} succeeds with a null handle
 * @param pageSize      the page size ranges are widened to
 */
public record RegSettings(boolean localRegister, long pageSize) {
    /** The NCCL variable that switches local registration. */
    public static final String LOCAL_REGISTER = io.gdrkit.gdr.config.GdrConfiguration.LOCAL_REGISTER.name();

    public RegSettings {
        PageRange.checkPageSize(pageSize);
    }

    /** NCCL's defaults: local registration on, 4 KiB pages. */
    public static RegSettings defaults() {
        return new RegSettings(true, NetMrCache.DEFAULT_PAGE_SIZE);
    }

}
