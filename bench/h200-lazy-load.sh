#!/bin/bash
# Does loading a module (CUDA lazy loading, the default) or allocating/freeing wait for a kernel that is running?
# The cause of the shmem ping-pong timeout (docs/SHMEM.md, "H200"). Python 3 + ctypes over libcuda, no build.
# Result on the H200: docs/results/h200-lazy-load.txt
python3 - <<'P'
import ctypes as C,time
c=C.CDLL('libcuda.so.1')
def k(r,n):
  if r:raise SystemExit(n+' rc '+str(r))
k(c.cuInit(0),'init');d=C.c_int();k(c.cuDeviceGet(C.byref(d),0),'dev')
x=C.c_void_p();k(c.cuDevicePrimaryCtxRetain(C.byref(x),d),'ctx');k(c.cuCtxSetCurrent(x),'cur')
P=b""".version 7.0
.target sm_70
.address_size 64
.visible .entry spin(.param .u64 n)
{
.reg .u64 %a<5>;
.reg .pred %p;
ld.param.u64 %a1,[n];
mov.u64 %a2,%globaltimer;
L:
mov.u64 %a3,%globaltimer;
sub.u64 %a4,%a3,%a2;
setp.lt.u64 %p,%a4,%a1;
@%p bra L;
ret;
}
"""
def load():
  m=C.c_void_p();t=time.time();k(c.cuModuleLoadData(C.byref(m),P),'load');t1=time.time()
  f=C.c_void_p();k(c.cuModuleGetFunction(C.byref(f),m,b'spin'),'fn');return f,t1-t,time.time()-t1
s=C.c_void_p();k(c.cuStreamCreate(C.byref(s),1),'st')
f,a,b=load();print('idle: load %.3f s, getFunction %.3f s'%(a,b))
ns=C.c_uint64(1500000000);arg=(C.c_void_p*1)(C.cast(C.byref(ns),C.c_void_p))
def go():
  k(c.cuLaunchKernel(f,1,1,1,1,1,1,0,s,arg,None),'launch');time.sleep(0.1)
go();_,a,b=load();print('kernel spinning 1.5 s (launched 0.1 s before): load %.3f s, getFunction %.3f s'%(a,b))
k(c.cuStreamSynchronize(s),'sync')
go();h=C.c_void_p();t=time.time();k(c.cuMemAllocHost_v2(C.byref(h),C.c_size_t(4096)),'ah');print('spinning: cuMemAllocHost %.3f s'%(time.time()-t))
k(c.cuStreamSynchronize(s),'sync')
go();p=C.c_uint64();t=time.time();k(c.cuMemAlloc_v2(C.byref(p),C.c_size_t(1<<20)),'a');print('spinning: cuMemAlloc %.3f s'%(time.time()-t))
t=time.time();k(c.cuMemFree_v2(p),'f');print('spinning: cuMemFree %.3f s'%(time.time()-t))
k(c.cuStreamSynchronize(s),'sync')
m=C.c_int();c.cuModuleGetLoadingMode(C.byref(m));print('loading mode (1 eager, 2 lazy):',m.value)
P
