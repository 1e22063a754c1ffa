// lay.cu - movmatrix and stmatrix (x4, x4.trans) on random registers, as
// run on an NVIDIA H200 to record lay_h200.bin. test_emu_mma.c regenerates
// the inputs, runs lay.ptx on the emulated device and compares. Made with
//   nvcc -gencode arch=compute_90a,code=sm_90a -o lay lay.cu && ./lay lay_h200.bin
//   nvcc --ptx -gencode arch=compute_90a,code=compute_90a -o lay.ptx lay.cu
#include <cstdint>
#include <cstdio>
__global__ void k(const uint32_t*a,uint32_t*o,uint16_t*m){__shared__ __align__(16) uint16_t s[512];int l=threadIdx.x,b=blockIdx.x;const uint32_t*x=a+(b*32+l)*5;uint32_t r;
asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0,%1;":"=r"(r):"r"(x[0]));o[b*32+l]=r;
uint32_t p=(uint32_t)__cvta_generic_to_shared(&s[(l*5%32)*8]);
asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0],{%1,%2,%3,%4};"::"r"(p),"r"(x[1]),"r"(x[2]),"r"(x[3]),"r"(x[4]):"memory");
asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0],{%1,%2,%3,%4};"::"r"(p+512),"r"(x[1]),"r"(x[2]),"r"(x[3]),"r"(x[4]):"memory");
__syncwarp();for(int i=l;i<512;i+=32)m[b*512+i]=s[i];}
uint32_t q=5;uint32_t r(){q=q*1664525u+1013904223u;return q>>8;}
int main(int c,char**v){int B=64,N=B*160;uint32_t*H=(uint32_t*)malloc(N*4),*O=(uint32_t*)malloc(B*128);uint16_t*M=(uint16_t*)malloc(B*1024);
for(int i=0;i<N;i++){H[i]=r();H[i]^=r()<<16;}
uint32_t*DA,*DO;uint16_t*DM;cudaMalloc(&DA,N*4);cudaMalloc(&DO,B*128);cudaMalloc(&DM,B*1024);cudaMemcpy(DA,H,N*4,cudaMemcpyHostToDevice);k<<<B,32>>>(DA,DO,DM);
cudaMemcpy(O,DO,B*128,cudaMemcpyDeviceToHost);cudaMemcpy(M,DM,B*1024,cudaMemcpyDeviceToHost);printf("%s\n",cudaGetErrorString(cudaGetLastError()));
FILE*F=fopen(v[1],"wb");fwrite(O,4,B*32,F);fwrite(M,2,B*512,F);fclose(F);}
