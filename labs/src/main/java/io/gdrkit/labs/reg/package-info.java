/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/**
 * Registration timing: the NET MR cache and the communicator cache in front of the software NIC's MR
 * registration, and the CUDA driver's registration costs on a real GPU. Returns records; prints nothing.
 */
package io.gdrkit.labs.reg;
