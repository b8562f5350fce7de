package io.gdrkit.gdr.reg;

import java.util.Map;

/**
 * The registration settings of a communicator.
 *
 * @param localRegister register user buffers at all (NCCL_LOCAL_REGISTER, default 1); when off,
 *                      {@link CommRegistrationCache#register(long, long)} succeeds with a null handle
 * @param pageSize      the page size ranges are widened to
 */
public record RegSettings(boolean localRegister, long pageSize) {
    /** The NCCL variable that switches local registration. */
    public static final String LOCAL_REGISTER = "NCCL_LOCAL_REGISTER";

    public RegSettings {
        PageRange.checkPageSize(pageSize);
    }

    /** NCCL's defaults: local registration on, 4 KiB pages. */
    public static RegSettings defaults() {
        return new RegSettings(true, NetMrCache.DEFAULT_PAGE_SIZE);
    }

    /**
     * Reads the settings from variables (the environment, or gdrkit options under the same names). An integer,
     * as NCCL parses it: 0 is off, anything else on.
     *
     * @throws IllegalArgumentException if a value is not an integer
     */
    public static RegSettings from(final Map<String, String> vars) {
        final String value = vars.get(LOCAL_REGISTER);
        if (value == null || value.isBlank()) {
            return defaults();
        }
        try {
            return new RegSettings(Long.parseLong(value.trim()) != 0, NetMrCache.DEFAULT_PAGE_SIZE);
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException(LOCAL_REGISTER + " must be an integer, was '" + value + "'", ex);
        }
    }
}
