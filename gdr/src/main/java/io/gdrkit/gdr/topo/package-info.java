/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * Host topology for GPUDirect decisions: a model of CPUs, host bridges, PCIe switches, GPUs, NICs and
 * NVLink; readers from sysfs, NCCL topology XML and {@code nvidia-smi topo -m} text, and a builder for code; path
 * types LOC..DIS computed as NCCL &gt;= 2.26 does, including PXN through an intermediate GPU; and the GDR level
 * with its distance check.
 */
package io.gdrkit.gdr.topo;
