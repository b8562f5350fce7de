/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.gpu.config;

import io.gdrkit.core.config.SettingDef;
import io.gdrkit.core.config.SettingsCatalogue;
import java.util.List;

/**
 * The gpu module's settings: which CUDA driver library {@link io.gdrkit.gpu.cuda.CudaDriver} loads, and how the
 * software NIC delivers into CUDA device memory (the delivery agent).
 */
public final class GpuConfiguration {
    /** The CUDA driver library to load (a path), instead of the loader's {@code libcuda.so.1}. */
    public static final SettingDef<String> CUDA_LIBRARY = SettingDef.text("gdrkit.cuda.library", "libcuda.so.1",
        "the CUDA driver library to load: a path for a driver outside the loader's path, or a test double")
        .valid("a library name or path").readBy("CudaDriver");

    /** Whether the software NIC delivers into a CUDA GPU through the delivery agent or the copy engine alone. */
    public enum AgentMode {
        /** The copy engine alone: one cuMemcpyHtoDAsync per span. */
        OFF,
        /** The agent kernel; a device where it cannot start fails the NIC's write with a named error. */
        ON,
        /** The agent on a CUDA GPU, the copy engine where it cannot start (the reason is in the NIC's stats). */
        AUTO
    }

    /** The GPU-side delivery agent (docs/GPU.md, "Delivery agent"). */
    public static final SettingDef<AgentMode> CUDA_AGENT = SettingDef.choice("gdrkit.cuda.agent", AgentMode.OFF,
        AgentMode.class, "how the software NIC delivers into CUDA device memory: off = the copy engine alone, on = a "
            + "persistent agent kernel copies small spans with SM loads and stores, auto = on where the agent starts "
            + "(off by default: it saves a few microseconds per small delivery but keeps blocks resident, and "
            + "processes sharing a GPU without MPS then time-slice; docs/GPU.md)").readBy("NicStaging");

    /** Spans at least this long go to the copy engine while the agent runs. */
    public static final SettingDef<Long> CUDA_AGENT_CROSSOVER = SettingDef.longValue("gdrkit.cuda.agent.crossover.bytes",
        256L << 10, 1, 1L << 30, "with the agent on, a staged span of at least this many bytes goes to the copy engine "
            + "instead (spans are issued at 128 KiB, so the default sends every span to the agent; not yet measured "
            + "on a GPU)").readBy("NicStaging");

    /** A descriptor not completed within this long is a stalled agent. */
    public static final SettingDef<Long> CUDA_AGENT_STALL_MS = SettingDef.longValue("gdrkit.cuda.agent.stall.ms",
        5000, 1, 3_600_000, "a delivery the agent has not completed within this many milliseconds fails the NIC with "
            + "GDRKIT_AGENT_STALLED (DEVICE_FATAL, QPs to ERR)").readBy("CudaAgent");

    /** Blocks of the agent kernel (256 threads each). */
    public static final SettingDef<Integer> CUDA_AGENT_BLOCKS = SettingDef.integer("gdrkit.cuda.agent.blocks", 16, 1,
        1024, "thread blocks of the agent kernel, 256 threads each; it keeps them resident while it runs, so keep "
            + "this well below the GPU's SM count").readBy("CudaAgent");

    /** Every setting of this module, in documentation order. */
    public static final List<SettingDef<?>> ALL = List.of(CUDA_LIBRARY, CUDA_AGENT, CUDA_AGENT_CROSSOVER,
        CUDA_AGENT_STALL_MS, CUDA_AGENT_BLOCKS);

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
                + "library loaded and the one reported cannot differ. The `gdrkit.cuda.agent*` settings are "
                + "read through `SettingsReader.ofProcess()` each time a CUDA device is opened. The simulated GPU (`SimGpuConfig`) has no "
                + "setting read from outside: the code that creates it configures it.";
        }
    }
}
