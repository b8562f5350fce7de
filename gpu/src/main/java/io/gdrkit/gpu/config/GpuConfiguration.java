/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.config;

import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import java.util.List;

/** The gpu module's settings: which CUDA driver library {@link io.gdrkit.gpu.cuda.CudaDriver} loads. */
public final class GpuConfiguration {
    /** The CUDA driver library to load (a path), instead of the loader's {@code libcuda.so.1}. */
    public static final SettingDef<String> CUDA_LIBRARY = SettingDef.text("gdrkit.cuda.library", "libcuda.so.1",
        "the CUDA driver library to load: a path for a driver outside the loader's path, or a test double")
        .valid("a library name or path").readBy("CudaDriver");

    /** Every setting of this module, in documentation order. */
    public static final List<SettingDef<?>> ALL = List.of(CUDA_LIBRARY);

    private GpuConfiguration() {
    }

    /** This module's catalogue, for {@link io.gdrkit.core.config.Catalogues}. */
    public static final class Catalogue implements SettingsCatalogue {
        /** For {@link java.util.ServiceLoader}. */
        public Catalogue() {
        }

        @Override
        public String module() {
            return "gpu";
        }

        @Override
        public Class<?> configurationClass() {
            return GpuConfiguration.class;
        }

        @Override
        public int order() {
            return 30;
        }

        @Override
        public List<SettingDef<?>> settings() {
            return ALL;
        }

        @Override
        public String description() {
            return "Read once per JVM by `CudaDriver.librarySetting()` through `SettingsReader.ofProcess()`, so the "
                + "library loaded and the one reported cannot differ. The simulated GPU (`SimGpuConfig`) has no "
                + "setting read from outside: the code that creates it configures it.";
        }
    }
}
