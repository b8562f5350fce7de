/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
#include "../../main/resources/io/gdrkit/gpu/cuda/coll.cu"
#include <cstdio>
#define N 5000
template<class T> int run(int ty,int op){static T a[N],b[N],r[N];for(int i=0;i<N;i++){a[i]=T(float((i*7)%11-5));b[i]=T(float((i*3)%5-2));}
unsigned char*d,*s;cudaMalloc(&d,sizeof a+64);cudaMalloc(&s,sizeof b+64);cudaMemcpy(d+64,a,sizeof a,cudaMemcpyHostToDevice);cudaMemcpy(s+16,b,sizeof b,cudaMemcpyHostToDevice);
coll_reduce<<<7,256>>>(d,64,s,16,N,ty,op);cudaMemcpy(r,d+64,sizeof r,cudaMemcpyDeviceToHost);int bad=0;
for(int i=0;i<N;i++){float x=float(a[i]),y=float(b[i]);float e=op==0?x+y:op==1?x*y:op==2?fminf(x,y):fmaxf(x,y);if(float(r[i])!=e)bad++;}
printf("t%d o%d bad %d %s\n",ty,op,bad,cudaGetErrorString(cudaGetLastError()));return bad;}
int main(){int b=0;for(int o=0;o<4;o++){b+=run<signed char>(0,o);b+=run<int>(1,o);b+=run<long long>(2,o);b+=run<__half>(3,o);b+=run<__nv_bfloat16>(4,o);b+=run<float>(5,o);b+=run<double>(6,o);}printf("total bad %d\n",b);return b!=0;}
