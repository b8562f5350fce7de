/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * The GPUDirect control plane: topology and path types, the GDR gates with their evidence, the flush
 * policy, and NCCL's registration caches. Semantics follow NCCL's source unless stated otherwise.
 */
package io.gdrkit.gdr;
