#!/bin/sh
# Regenerates the PTX shipped as resources from the .cu sources next to them.
#   kernels.ptx        compute_90 (Hopper), PTX ISA of the installed nvcc
#   kernels_sm75.ptx   compute_75 with PTX ISA 7.0 declared: loads on older drivers (CUDA 11.0+) and GPUs (sm_75+)
# The driver JIT-compiles PTX to the GPU it runs on; a driver older than the PTX ISA refuses it with
# CUDA_ERROR_UNSUPPORTED_PTX_VERSION, which CudaGpu reports by name.
set -eu
cd "$(dirname "$0")/src/main/resources/io/gdrkit/gpu/cuda"
NVCC=${NVCC:-nvcc}
"$NVCC" --version | tail -1
"$NVCC" -ptx -arch=compute_90 -O3 kernels.cu -o kernels.ptx
"$NVCC" -ptx -arch=compute_75 -O3 kernels.cu -o kernels_sm75.ptx
# The kernels use no instruction newer than PTX ISA 7.0 (CUDA 11.0), so declare that ISA in the compat module,
# which lets a CUDA 11/12 driver JIT it; ptxas below checks that the declaration holds.
sed -i 's/^\.version .*/.version 7.0/' kernels_sm75.ptx
PTXAS=${PTXAS:-$(dirname "$(command -v "$NVCC")")/ptxas}
[ -x "$PTXAS" ] || PTXAS=/usr/local/cuda/bin/ptxas
for arch in sm_75 sm_90; do "$PTXAS" -arch=$arch kernels_sm75.ptx -o /dev/null; done
"$PTXAS" -arch=sm_90 kernels.ptx -o /dev/null
grep -H '^\.version\|^\.target' kernels.ptx kernels_sm75.ptx
