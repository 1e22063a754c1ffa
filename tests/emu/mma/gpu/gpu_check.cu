// gpu_check.cu - runs the matrix-instruction test kernels (../mma_sm80.cu,
// ../mma_sm90.cu) on a real GPU (sm_90a) with random inputs and writes each
// launch, inputs and the GPU's outputs, to a case file that emu_replay.c
// replays on the emulated device and compares. Not part of ctest (needs a
// GPU). Build and run:
//   nvcc -arch=sm_90a -o gpu_check tests/emu/mma/gpu/gpu_check.cu
//   ./gpu_check cases.bin
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../mma_sm80.cu"
#include "../mma_sm90.cu"

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

enum { K_IN = 0, K_OUT = 1, K_U32 = 2, K_U64 = 3 };
enum { O_RAW = 0, O_F32 = 1, O_F16X2 = 2, O_F64 = 3 };

struct Param {
  uint32_t kind, otype;
  std::vector<uint8_t> data;
};

static uint32_t rs = 2024;
static uint32_t rnd() {
  rs = rs * 1664525u + 1013904223u;
  return rs >> 8;
}
static uint16_t rf16() { return (uint16_t)((rnd() & 0x83ffu) | ((13 + rnd() % 4) << 10)); }
static uint16_t rbf16() { return (uint16_t)((rnd() & 0x807fu) | ((125 + rnd() % 4) << 7)); }
static uint32_t rf32() { return (rnd() & 0x807fffffu) | ((125u + rnd() % 4) << 23); }

static FILE *out;

static void emit(const char *name, const char *mod, const void *fn, uint32_t block,
                 uint32_t shared, std::vector<Param> &ps) {
  std::vector<void *> dptr(ps.size(), nullptr);
  std::vector<void *> args(ps.size());
  std::vector<uint64_t> scal(ps.size());
  for (size_t i = 0; i < ps.size(); i++) {
    if (ps[i].kind == K_IN || ps[i].kind == K_OUT) {
      CK(cudaMalloc(&dptr[i], ps[i].data.size()));
      CK(cudaMemcpy(dptr[i], ps[i].data.data(), ps[i].data.size(), cudaMemcpyHostToDevice));
      args[i] = &dptr[i];
    } else {
      memcpy(&scal[i], ps[i].data.data(), ps[i].data.size());
      args[i] = &scal[i];
    }
  }
  if (shared > 48 * 1024)
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
  CK(cudaLaunchKernel(fn, dim3(1), dim3(block), args.data(), shared, 0));
  CK(cudaDeviceSynchronize());
  for (size_t i = 0; i < ps.size(); i++)
    if (ps[i].kind == K_OUT)
      CK(cudaMemcpy(ps[i].data.data(), dptr[i], ps[i].data.size(), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < ps.size(); i++)
    if (dptr[i]) CK(cudaFree(dptr[i]));
  char nm[32] = {0}, md[8] = {0};
  snprintf(nm, sizeof nm, "%s", name);
  snprintf(md, sizeof md, "%s", mod);
  uint32_t hdr[3] = {block, shared, (uint32_t)ps.size()};
  fwrite("CASE", 1, 4, out);
  fwrite(nm, 1, 32, out);
  fwrite(md, 1, 8, out);
  fwrite(hdr, 4, 3, out);
  for (auto &p : ps) {
    uint64_t sz = p.data.size();
    fwrite(&p.kind, 4, 1, out);
    fwrite(&p.otype, 4, 1, out);
    fwrite(&sz, 8, 1, out);
    fwrite(p.data.data(), 1, sz, out);
  }
}

static Param buf(uint32_t kind, uint32_t otype, size_t n) {
  Param p{kind, otype, std::vector<uint8_t>(n, 0)};
  return p;
}
template <class T> static Param scalar(T v) {
  Param p{sizeof(T) == 8 ? (uint32_t)K_U64 : (uint32_t)K_U32, O_RAW, std::vector<uint8_t>(sizeof(T))};
  memcpy(p.data.data(), &v, sizeof(T));
  return p;
}

enum { T_F16, T_BF16, T_TF32, T_F64, T_S8, T_U8, T_F32, T_S32 };

/* one 32-bit register (or f64) of elements of type t */
static void fill_reg(uint8_t *p, int t) {
  uint32_t v = 0;
  switch (t) {
  case T_F16: v = rf16() | (uint32_t)rf16() << 16; break;
  case T_BF16: v = rbf16() | (uint32_t)rbf16() << 16; break;
  case T_TF32:
  case T_F32: v = rf32(); break;
  case T_S8:
  case T_U8: v = rnd() ^ (rnd() << 16); break;
  case T_S32: v = rnd() % 2001u - 1000u; break;
  case T_F64: {
    double d = ((int)(rnd() % 200001) - 100000) / 977.0;
    memcpy(p, &d, 8);
    return;
  }
  }
  memcpy(p, &v, 4);
}

struct MmaK {
  const char *name;
  const void *fn;
  int na, nb, nc, nd, at, bt, ct, dt, sat;
};

int main(int argc, char **argv) {
  out = fopen(argc > 1 ? argv[1] : "cases.bin", "wb");
  if (!out) return 1;
  /* ldmatrix, movmatrix, stmatrix */
  const struct { const char *n; const void *f; } ldm[] = {
      {"ldm_x1", (const void *)ldm_x1}, {"ldm_x2", (const void *)ldm_x2},
      {"ldm_x4", (const void *)ldm_x4}, {"ldm_x1_t", (const void *)ldm_x1_t},
      {"ldm_x2_t", (const void *)ldm_x2_t}, {"ldm_x4_t", (const void *)ldm_x4_t}};
  for (auto &k : ldm) {
    std::vector<Param> ps{buf(K_IN, O_RAW, 512), buf(K_OUT, O_RAW, 512)};
    for (auto &b : ps[0].data) b = (uint8_t)rnd();
    emit(k.n, "sm80", k.f, 32, 0, ps);
  }
  {
    std::vector<Param> ps{buf(K_IN, O_RAW, 128), buf(K_OUT, O_RAW, 128)};
    for (auto &b : ps[0].data) b = (uint8_t)rnd();
    emit("movm", "sm80", (const void *)movm, 32, 0, ps);
  }
  const struct { const char *n; const void *f; } stm[] = {
      {"stm_x1", (const void *)stm_x1}, {"stm_x2", (const void *)stm_x2},
      {"stm_x4", (const void *)stm_x4}, {"stm_x1_t", (const void *)stm_x1_t},
      {"stm_x2_t", (const void *)stm_x2_t}, {"stm_x4_t", (const void *)stm_x4_t}};
  for (auto &k : stm) {
    std::vector<Param> ps{buf(K_IN, O_RAW, 512), buf(K_OUT, O_RAW, 512)};
    for (auto &b : ps[0].data) b = (uint8_t)rnd();
    emit(k.n, "sm90", k.f, 32, 0, ps);
  }
  /* mma */
  const MmaK mk[] = {
      {"mma_f16_16816_f32", (const void *)mma_f16_16816_f32, 4, 2, 4, 4, T_F16, T_F16, T_F32, T_F32, 0},
      {"mma_f16_16816_f16", (const void *)mma_f16_16816_f16, 4, 2, 2, 2, T_F16, T_F16, T_F16, T_F16, 0},
      {"mma_f16_1688_f32", (const void *)mma_f16_1688_f32, 2, 1, 4, 4, T_F16, T_F16, T_F32, T_F32, 0},
      {"mma_bf16_16816", (const void *)mma_bf16_16816, 4, 2, 4, 4, T_BF16, T_BF16, T_F32, T_F32, 0},
      {"mma_bf16_1688", (const void *)mma_bf16_1688, 2, 1, 4, 4, T_BF16, T_BF16, T_F32, T_F32, 0},
      {"mma_tf32_1688", (const void *)mma_tf32_1688, 4, 2, 4, 4, T_TF32, T_TF32, T_F32, T_F32, 0},
      {"mma_tf32_1684", (const void *)mma_tf32_1684, 2, 1, 4, 4, T_TF32, T_TF32, T_F32, T_F32, 0},
      {"mma_f64_884", (const void *)mma_f64_884, 1, 1, 2, 2, T_F64, T_F64, T_F64, T_F64, 0},
      {"mma_s8_16832", (const void *)mma_s8_16832, 4, 2, 4, 4, T_S8, T_S8, T_S32, T_S32, 0},
      {"mma_u8s8_16832_sat", (const void *)mma_u8s8_16832_sat, 4, 2, 4, 4, T_U8, T_S8, T_S32, T_S32, 1},
      {"mma_s8u8_16816", (const void *)mma_s8u8_16816, 2, 1, 4, 4, T_S8, T_U8, T_S32, T_S32, 0},
      {"mma_s8_8816", (const void *)mma_s8_8816, 1, 1, 2, 2, T_S8, T_S8, T_S32, T_S32, 0},
  };
  for (int rep = 0; rep < 8; rep++)
    for (auto &k : mk) {
      size_t es = k.at == T_F64 ? 8 : 4;
      std::vector<Param> ps{buf(K_IN, O_RAW, 32 * k.na * es), buf(K_IN, O_RAW, 32 * k.nb * es),
                            buf(K_IN, O_RAW, 32 * k.nc * es),
                            buf(K_OUT, k.dt == T_F32 ? O_F32 : k.dt == T_F16 ? O_F16X2 : k.dt == T_F64 ? O_F64 : O_RAW,
                                32 * k.nd * es)};
      int ts[3] = {k.at, k.bt, k.ct};
      for (int s = 0; s < 3; s++)
        for (size_t o = 0; o < ps[s].data.size(); o += es) {
          fill_reg(ps[s].data.data() + o, ts[s]);
          if (s == 2 && k.ct == T_S32 && rep == 7) { /* overflow: wrap or saturate */
            int32_t v = (o / 4) & 1 ? INT32_MIN + (int32_t)(rnd() % 1000) : INT32_MAX - (int32_t)(rnd() % 1000);
            memcpy(ps[s].data.data() + o, &v, 4);
          }
        }
      emit(k.name, "sm80", k.fn, 32, 0, ps);
    }
  /* wgmma: random images of the element type; descriptors as test_emu_mma.c's */
  struct WgL { int W; uint32_t lbo, sbo, base, step; };
  struct WgK { const char *name; const void *fn; int t, dt, nd, ksteps, scale_d; WgL la, lb; uint32_t bytes; };
  auto desc = [](const WgL &L) -> uint64_t {
    uint64_t sw = L.W == 128 ? 1 : L.W == 64 ? 2 : L.W == 32 ? 3 : 0;
    return (uint64_t)(L.base >> 4) | (uint64_t)((L.lbo >> 4) & 0x3fff) << 16 |
           (uint64_t)((L.sbo >> 4) & 0x3fff) << 32 | sw << 62;
  };
  const WgK wk[] = {
      {"wg_f16_n64_kk", (const void *)wg_f16_n64_kk, T_F16, T_F32, 32, 4, 1, {128, 16, 1024, 0, 32}, {128, 16, 1024, 8192, 32}, 16384},
      {"wg_f16_n64_mm", (const void *)wg_f16_n64_mm, T_F16, T_F32, 32, 2, 0, {64, 1024, 512, 0, 2048}, {128, 16, 1024, 4096, 2048}, 8192},
      {"wg_bf16_n16_km", (const void *)wg_bf16_n16_km, T_BF16, T_F32, 8, 2, 1, {0, 128, 256, 0, 2048}, {0, 256, 128, 4096, 512}, 5120},
      {"wg_f16_n256_kk", (const void *)wg_f16_n256_kk, T_F16, T_F32, 128, 2, 1, {32, 16, 256, 0, 2048}, {64, 16, 512, 4096, 32}, 20480},
      {"wg_f16acc_n32", (const void *)wg_f16acc_n32, T_F16, T_F16, 8, 1, 1, {128, 16, 1024, 0, 0}, {0, 128, 256, 8192, 0}, 9216},
      {"wg_tf32_n24", (const void *)wg_tf32_n24, T_TF32, T_F32, 12, 3, 1, {32, 16, 256, 0, 2048}, {128, 16, 1024, 6144, 32}, 9216},
      {"wg_f16_n8_ra", (const void *)wg_f16_n8_ra, T_F16, T_F32, 4, 1, 0, {0, 0, 0, 0, 0}, {0, 128, 256, 0, 0}, 1024},
      {"wg_bf16_n16_mm", (const void *)wg_bf16_n16_mm, T_BF16, T_F32, 8, 2, 1, {32, 512, 256, 0, 2048}, {32, 16, 256, 4096, 512}, 5120},
      {"wg_tf32_n16_ra", (const void *)wg_tf32_n16_ra, T_TF32, T_F32, 8, 1, 1, {0, 0, 0, 0, 0}, {64, 16, 512, 0, 0}, 4096},
  };
  for (int rep = 0; rep < 2; rep++)
    for (auto &k : wk) {
      std::vector<Param> ps;
      ps.push_back(buf(K_IN, O_RAW, k.bytes));
      for (size_t o = 0; o < k.bytes; o += 4) fill_reg(ps[0].data.data() + o, k.t);
      ps.push_back(scalar<uint32_t>(k.bytes / 16));
      ps.push_back(scalar<uint64_t>(desc(k.la)));
      ps.push_back(scalar<uint64_t>(desc(k.lb)));
      ps.push_back(scalar<uint32_t>(k.la.step >> 4));
      ps.push_back(scalar<uint32_t>(k.lb.step >> 4));
      ps.push_back(scalar<int32_t>(k.ksteps));
      ps.push_back(buf(K_IN, O_RAW, 128 * 4 * k.nd));
      for (size_t o = 0; o < ps.back().data.size(); o += 4) fill_reg(ps.back().data.data() + o, k.dt);
      ps.push_back(buf(K_OUT, k.dt == T_F32 ? O_F32 : O_F16X2, 128 * 4 * k.nd));
      ps.push_back(scalar<int32_t>(k.scale_d));
      ps.push_back(buf(K_IN, O_RAW, 128 * 4 * 4));
      for (size_t o = 0; o < ps.back().data.size(); o += 4) fill_reg(ps.back().data.data() + o, k.t);
      emit(k.name, "sm90", k.fn, 128, k.bytes, ps);
    }
  fclose(out);
  printf("ok\n");
  return 0;
}
