// wg.cu - wgmma m64n64k16 f16 from one random shared-memory image under
// eight descriptor layouts (K-major and MN-major, no swizzle, 32B, 64B,
// 128B), as run on an NVIDIA H200 to record wg_h200.bin (the outputs).
// test_emu_mma.c regenerates the image, runs wg.ptx on the emulated device
// and compares. Made with
//   nvcc -gencode arch=compute_90a,code=sm_90a -o wg wg.cu && ./wg wg.bin
//   (wg_h200.bin: wg.bin after its 16384-byte image)
//   nvcc --ptx -gencode arch=compute_90a,code=compute_90a -o wg.ptx wg.cu
#include <cstdint>
#include <cstdio>
#define F4(o) "+f"(d[o]),"+f"(d[o+1]),"+f"(d[o+2]),"+f"(d[o+3])
template<int A,int B> __global__ void w(const uint4*g,uint64_t da,uint64_t db,float*o){extern __shared__ __align__(1024) uint4 s[];
for(int i=threadIdx.x;i<1024;i+=128)s[i]=g[i];__syncthreads();asm volatile("fence.proxy.async.shared::cta;":::"memory");
uint64_t b=(uint32_t)__cvta_generic_to_shared(s)>>4;float d[32];for(int i=0;i<32;i++)d[i]=0;asm volatile("wgmma.fence.sync.aligned;");
asm volatile("{.reg .pred p;setp.ne.b32 p,%34,0;wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31},%32,%33,p,1,1,%35,%36;}":F4(0),F4(4),F4(8),F4(12),F4(16),F4(20),F4(24),F4(28):"l"(da+b),"l"(db+b),"r"(1),"n"(A),"n"(B));
asm volatile("wgmma.commit_group.sync.aligned;wgmma.wait_group.sync.aligned 0;":::"memory");for(int i=0;i<32;i++)o[threadIdx.x*32+i]=d[i];}
uint32_t q=9;uint32_t r(){q=q*1664525u+1013904223u;return q>>8;}
uint64_t D(int b,int l,int t,int w){return b/16|(uint64_t)(l/16)<<16|(uint64_t)(t/16)<<32|(uint64_t)w<<62;}
int main(int c,char**v){uint16_t*H=(uint16_t*)malloc(16384);for(int i=0;i<8192;i++)H[i]=(r()&0x83ff)|((5+r()%21)<<10);
int C[8][4]={{0,16,1024,1},{0,128,256,0},{0,16,256,3},{0,16,512,2},{1,16,1024,1},{1,1024,512,2},{1,512,256,3},{1,1024,128,0}};
uint4*G;float*O;cudaMalloc(&G,16384);cudaMalloc(&O,16384);cudaMemcpy(G,H,16384,cudaMemcpyHostToDevice);
FILE*F=fopen(v[1],"wb");fwrite(H,2,8192,F);float R[4096];
for(int k=0;k<8;k++){uint64_t a=D(0,C[k][1],C[k][2],C[k][3]),b=D(8192,C[k][1],C[k][2],C[k][3]);
if(C[k][0])w<1,1><<<1,128,16384>>>(G,a,b,O);else w<0,0><<<1,128,16384>>>(G,a,b,O);
cudaMemcpy(R,O,16384,cudaMemcpyDeviceToHost);fwrite(R,4,4096,F);}
printf("%s\n",cudaGetErrorString(cudaGetLastError()));fclose(F);}
