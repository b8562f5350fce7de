#!/bin/sh
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
# Regenerates the PTX shipped as resources from the .cu sources next to them, for each module (default: kernels
# coll agent; MODULES="coll" builds one):
#   <module>.ptx        compute_90 (Hopper), PTX ISA of the installed nvcc
#   <module>_sm75.ptx   compute_75 with PTX ISA 7.0 declared: loads on older drivers (CUDA 11.0+) and GPUs (sm_75+)
# The driver JIT-compiles PTX to the GPU it runs on; a driver older than the PTX ISA refuses it with
# CUDA_ERROR_UNSUPPORTED_PTX_VERSION, which CudaGpu reports by name. DEST=dir writes the PTX there instead.
set -eu
cd "$(dirname "$0")/src/main/resources/io/gdrkit/gpu/cuda"
NVCC=${NVCC:-nvcc}
DEST=${DEST:-.}
"$NVCC" --version | tail -1
PTXAS=${PTXAS:-$(dirname "$(command -v "$NVCC")")/ptxas}
[ -x "$PTXAS" ] || PTXAS=/usr/local/cuda/bin/ptxas
for m in ${MODULES:-kernels coll agent}; do
  "$NVCC" -ptx -arch=compute_90 -O3 "$m.cu" -o "$DEST/$m.ptx"
  "$NVCC" -ptx -arch=compute_75 -O3 "$m.cu" -o "$DEST/${m}_sm75.ptx"
  # The kernels use no instruction newer than PTX ISA 7.0 (CUDA 11.0), so declare that ISA in the compat module,
  # which lets a CUDA 11/12 driver JIT it; ptxas below checks that the declaration holds.
  sed -i 's/^\.version .*/.version 7.0/' "$DEST/${m}_sm75.ptx"
  for arch in sm_75 sm_90; do "$PTXAS" -arch=$arch "$DEST/${m}_sm75.ptx" -o /dev/null; done
  "$PTXAS" -arch=sm_90 "$DEST/$m.ptx" -o /dev/null
  grep -H '^\.version\|^\.target' "$DEST/$m.ptx" "$DEST/${m}_sm75.ptx"
done
