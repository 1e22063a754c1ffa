// ari.cu - mma.sync u8*s8 m16n8k32 .satfinite, f16 m16n8k16 with f16
// accumulators and f64 m8n8k4 on random fragments, as run on an NVIDIA H200
// to record ari_h200.bin. test_emu_mma.c regenerates the inputs, runs
// ari.ptx on the emulated device and compares. Made with
//   nvcc -gencode arch=compute_90a,code=sm_90a -o ari ari.cu && ./ari ari_h200.bin
//   nvcc --ptx -arch=sm_80 -o ari.ptx ari.cu
#include <cstdint>
#include <cstdio>
__global__ void k(const uint32_t*a,const double*f,uint32_t*o,double*q){int t=blockIdx.x*32+threadIdx.x;const uint32_t*x=a+t*18;uint32_t*y=o+t*6;const double*g=f+t*4;
asm("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.s8.s32 {%0,%1,%2,%3},{%4,%5,%6,%7},{%8,%9},{%10,%11,%12,%13};":"=r"(y[0]),"=r"(y[1]),"=r"(y[2]),"=r"(y[3]):"r"(x[0]),"r"(x[1]),"r"(x[2]),"r"(x[3]),"r"(x[4]),"r"(x[5]),"r"(x[6]),"r"(x[7]),"r"(x[8]),"r"(x[9]));
asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1},{%2,%3,%4,%5},{%6,%7},{%8,%9};":"=r"(y[4]),"=r"(y[5]):"r"(x[10]),"r"(x[11]),"r"(x[12]),"r"(x[13]),"r"(x[14]),"r"(x[15]),"r"(x[16]),"r"(x[17]));
asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1},{%2},{%3},{%4,%5};":"=d"(q[t*2]),"=d"(q[t*2+1]):"d"(g[0]),"d"(g[1]),"d"(g[2]),"d"(g[3]));}
uint32_t z=3;uint32_t r(){z=z*1664525u+1013904223u;return z>>8;}
uint32_t h(){uint32_t m=r()&0x83ff;return m|(8+r()%10)<<10;}
int main(int c,char**v){int B=64,N=B*32*18,P=B*32*4;uint32_t*H=(uint32_t*)malloc(N*4),*O=(uint32_t*)malloc(B*32*24);double*G=(double*)malloc(P*8),*Q=(double*)malloc(B*32*16);
for(int i=0;i<N;i++){int j=i%18;uint32_t u=r();if(j<6){u^=r()<<16;}else if(j<10){u=u&1?0x7fffffffu-u%65536:u%2001-1000;}else{u=h();u|=h()<<16;}H[i]=u;}
for(int i=0;i<P;i++){int s=(int)(r()%2000001)-1000000;G[i]=s/977.0;}
uint32_t*DA,*DO;double*DG,*DQ;cudaMalloc(&DA,N*4);cudaMalloc(&DO,B*32*24);cudaMalloc(&DG,P*8);cudaMalloc(&DQ,B*32*16);
cudaMemcpy(DA,H,N*4,cudaMemcpyHostToDevice);cudaMemcpy(DG,G,P*8,cudaMemcpyHostToDevice);k<<<B,32>>>(DA,DG,DO,DQ);
cudaMemcpy(O,DO,B*32*24,cudaMemcpyDeviceToHost);cudaMemcpy(Q,DQ,B*32*16,cudaMemcpyDeviceToHost);printf("%s\n",cudaGetErrorString(cudaGetLastError()));
FILE*F=fopen(v[1],"wb");fwrite(O,4,B*32*6,F);fwrite(Q,8,B*32*2,F);fclose(F);}
