// byval_params.cu - a struct passed by value and parameters of every size
// (char, short, int, double, pointers, long long, unsigned char, float):
// each thread writes back what it received plus a per-thread mix.
struct prm {
  int a;
  float b;
  double c;
  char d[3];
  short e;
  long long f;
};
extern "C" __global__ void byval_params(char c, short s, int i, double d, struct prm p,
                                        const int *in, long long *out, unsigned char uc,
                                        float f) {
  unsigned t = threadIdx.x;
  long long *o = out + 16 * t;
  o[0] = c;
  o[1] = s;
  o[2] = i;
  o[3] = __double_as_longlong(d);
  o[4] = p.a;
  o[5] = __float_as_int(p.b);
  o[6] = __double_as_longlong(p.c);
  o[7] = p.d[0] * 65536 + p.d[1] * 256 + p.d[2];
  o[8] = p.e;
  o[9] = p.f;
  o[10] = uc;
  o[11] = __float_as_int(f);
  o[12] = (long long)in[t] * p.a + c;
  o[13] = (long long)in[t] + s * (long long)uc;
  o[14] = __double_as_longlong(__dmul_rn(d, (double)in[t]));
  o[15] = p.f ^ (long long)t;
}
