// acc.cu - mma.sync (f16, tf32, bf16) on random fragments, as run on an
// NVIDIA H200 to record acc_h200.bin (the outputs of the first 64 blocks).
// test_emu_mma.c regenerates the inputs with the same generator, runs
// acc.ptx on the emulated device and compares. Made with
//   nvcc -gencode arch=compute_90a,code=sm_90a -o acc acc.cu && ./acc acc.bin
//   (acc_h200.bin: the first 64 * 32 * 12 output words of acc.bin)
//   nvcc --ptx -arch=sm_80 -o acc.ptx acc.cu
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#define M(S,o,p) asm(S " {%0,%1,%2,%3},{%4,%5,%6,%7},{%8,%9},{%10,%11,%12,%13};":"=r"(y[o]),"=r"(y[o+1]),"=r"(y[o+2]),"=r"(y[o+3]):"r"(x[p]),"r"(x[p+1]),"r"(x[p+2]),"r"(x[p+3]),"r"(x[p+4]),"r"(x[p+5]),"r"(x[p+6]),"r"(x[p+7]),"r"(x[p+8]),"r"(x[p+9]))
extern "C" __global__ void k(const uint32_t*a,uint32_t*d){int t=blockIdx.x*32+threadIdx.x;const uint32_t*x=a+t*30;uint32_t*y=d+t*12;
M("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",0,0);
M("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",4,10);
M("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",8,20);}
uint32_t s=7;uint32_t r(){s=s*1664525u+1013904223u;return s>>8;}
uint32_t h(int lo,int n){return(r()&0x83ff)|((lo+r()%n)<<10);}
uint32_t f(int lo,int n){return(r()&0x807fffff)|((lo+r()%n)<<23);}
uint32_t g(){return(r()&0x807f)|((117+r()%20)<<7);}
int main(int c,char**v){int B=512,N=B*32*30;uint32_t*H=(uint32_t*)malloc(N*4),*O=(uint32_t*)malloc(B*32*48);
for(int i=0;i<N;i++){int j=i%30;H[i]=j<6?h(5,21)|h(5,21)<<16:j<10?f(100,50):j<16?f(117,20):j<20?f(100,50):j<26?g()|g()<<16:f(100,50);}
uint32_t*DA,*DO;cudaMalloc(&DA,N*4);cudaMalloc(&DO,B*32*48);cudaMemcpy(DA,H,N*4,cudaMemcpyHostToDevice);k<<<B,32>>>(DA,DO);
cudaMemcpy(O,DO,B*32*48,cudaMemcpyDeviceToHost);printf("%s\n",cudaGetErrorString(cudaGetLastError()));
FILE*F=fopen(v[1],"wb");fwrite(H,4,N,F);fwrite(O,4,B*32*12,F);fclose(F);}
