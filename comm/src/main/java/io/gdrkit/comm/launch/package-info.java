/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * Starting the rank processes of a run, like {@code mpirun} or {@code torchrun}.
 *
 * <p>{@link io.gdrkit.comm.launch.Launcher} starts a bootstrap root, then the rank processes on this host (or on
 * other hosts through ssh), each with the run's unique id, its rank, the number of ranks, its local rank and the
 * optional shared-secret token in its environment ({@link io.gdrkit.comm.bootstrap.BootstrapContext#ENV_ID} and the
 * variables beside it). A rank reads them with {@link io.gdrkit.comm.Comm#fromLauncher} or
 * {@link io.gdrkit.comm.bootstrap.BootstrapContext#fromEnvironment}. When a rank fails, the others get a grace
 * period to end on their own, then are killed; no rank outlives its launcher.
 */
package io.gdrkit.comm.launch;
