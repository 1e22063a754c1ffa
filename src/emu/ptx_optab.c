/*
 * ptx_optab.c - the PTX instruction tables: which base names the emulated
 * device decodes (and with which decoder), which it knows but refuses,
 * every mnemonic modifier it understands, and the special registers.
 */
#include <string.h>

#include "emu/ptx_ir.h"
#include "emu/ptx_optab.h"

static const gl_ptx_mod_def mods[] = {
    {".rn", MC_RND, GL_PTX_RND_RN}, {".rz", MC_RND, GL_PTX_RND_RZ},
    {".rm", MC_RND, GL_PTX_RND_RM}, {".rp", MC_RND, GL_PTX_RND_RP},
    {".rni", MC_RND, GL_PTX_RND_RNI}, {".rzi", MC_RND, GL_PTX_RND_RZI},
    {".rmi", MC_RND, GL_PTX_RND_RMI}, {".rpi", MC_RND, GL_PTX_RND_RPI},
    {".ftz", MC_FLAG, GL_PTX_F_FTZ}, {".sat", MC_FLAG, GL_PTX_F_SAT},
    {".approx", MC_FLAG, GL_PTX_F_APPROX}, {".full", MC_FLAG, GL_PTX_F_FULL},
    {".cc", MC_FLAG, GL_PTX_F_CC}, {".NaN", MC_FLAG, GL_PTX_F_NAN},
    {".relu", MC_FLAG, GL_PTX_F_RELU}, {".nc", MC_FLAG, GL_PTX_F_NONCOHERENT},
    {".clamp", MC_FLAG, GL_PTX_F_CLAMP}, {".shiftamt", MC_FLAG, GL_PTX_F_SHIFTAMT},
    {".global", MC_SPACE, GL_PTX_SPACE_GLOBAL}, {".shared", MC_SPACE, GL_PTX_SPACE_SHARED},
    {".shared::cta", MC_SPACE, GL_PTX_SPACE_SHARED}, {".local", MC_SPACE, GL_PTX_SPACE_LOCAL},
    {".const", MC_SPACE, GL_PTX_SPACE_CONST}, {".param", MC_SPACE, GL_PTX_SPACE_PARAM},
    {".param::entry", MC_SPACE, GL_PTX_SPACE_PARAM},
    {".param::func", MC_SPACE, GL_PTX_SPACE_PARAM},
    {".v2", MC_VEC, 2}, {".v4", MC_VEC, 4},
    {".volatile", MC_IGNORE, 0}, {".relaxed", MC_IGNORE, 0}, {".acquire", MC_IGNORE, 0},
    {".release", MC_IGNORE, 0}, {".acq_rel", MC_IGNORE, 0}, {".sc", MC_IGNORE, 0},
    {".weak", MC_IGNORE, 0}, {".mmio", MC_IGNORE, 0}, {".cta", MC_IGNORE, 0},
    {".gpu", MC_IGNORE, 0}, {".sys", MC_IGNORE, 0}, {".gl", MC_IGNORE, 0},
    {".ca", MC_IGNORE, 0}, {".cg", MC_IGNORE, 0}, {".cs", MC_IGNORE, 0},
    {".lu", MC_IGNORE, 0}, {".cv", MC_IGNORE, 0}, {".wb", MC_IGNORE, 0},
    {".wt", MC_IGNORE, 0}, {".aligned", MC_IGNORE, 0}, {".noftz", MC_IGNORE, 0},
    {".L1", MC_IGNORE, 0}, {".L2", MC_IGNORE, 0}, {".unified", MC_IGNORE, 0},
    {".L2::cache_hint", MC_HINT, 0},
    {".lo", MC_WORD, W_LO}, {".hi", MC_WORD, W_HI}, {".wide", MC_WORD, W_WIDE},
    {".eq", MC_WORD, W_EQ}, {".ne", MC_WORD, W_NE}, {".lt", MC_WORD, W_LT},
    {".le", MC_WORD, W_LE}, {".gt", MC_WORD, W_GT}, {".ge", MC_WORD, W_GE},
    {".ls", MC_WORD, W_LS}, {".hs", MC_WORD, W_HS}, {".equ", MC_WORD, W_EQU},
    {".neu", MC_WORD, W_NEU}, {".ltu", MC_WORD, W_LTU}, {".leu", MC_WORD, W_LEU},
    {".gtu", MC_WORD, W_GTU}, {".geu", MC_WORD, W_GEU}, {".num", MC_WORD, W_NUM},
    {".nan", MC_WORD, W_NAN}, {".and", MC_WORD, W_AND}, {".or", MC_WORD, W_OR},
    {".xor", MC_WORD, W_XOR}, {".add", MC_WORD, W_ADD}, {".inc", MC_WORD, W_INC},
    {".dec", MC_WORD, W_DEC}, {".min", MC_WORD, W_MIN}, {".max", MC_WORD, W_MAX},
    {".exch", MC_WORD, W_EXCH}, {".cas", MC_WORD, W_CAS}, {".up", MC_WORD, W_UP},
    {".down", MC_WORD, W_DOWN}, {".bfly", MC_WORD, W_BFLY}, {".idx", MC_WORD, W_IDX},
    {".all", MC_WORD, W_ALL}, {".any", MC_WORD, W_ANY}, {".uni", MC_WORD, W_UNI},
    {".ballot", MC_WORD, W_BALLOT}, {".sync", MC_WORD, W_SYNC},
    {".arrive", MC_WORD, W_ARRIVE}, {".red", MC_WORD, W_RED}, {".popc", MC_WORD, W_POPC},
    {".warp", MC_WORD, W_WARP}, {".to", MC_WORD, W_TO}, {".l", MC_WORD, W_L},
    {".r", MC_WORD, W_R}, {".wrap", MC_WORD, W_WRAP}, {".f4e", MC_WORD, W_F4E},
    {".b4e", MC_WORD, W_B4E}, {".rc8", MC_WORD, W_RC8}, {".ecl", MC_WORD, W_ECL},
    {".ecr", MC_WORD, W_ECR}, {".rc16", MC_WORD, W_RC16}, {".finite", MC_WORD, W_FINITE},
    {".infinite", MC_WORD, W_INFINITE}, {".number", MC_WORD, W_NUMBER},
    {".notanumber", MC_WORD, W_NOTANUMBER}, {".normal", MC_WORD, W_NORMAL},
    {".subnormal", MC_WORD, W_SUBNORMAL}, {".xorsign", MC_WORD, W_XORSIGN},
    {".abs", MC_WORD, W_ABS}, {".cluster", MC_WORD, W_CLUSTER}, {".wait", MC_WORD, W_WAIT},
    {".shared::cluster", MC_SPACE, GL_PTX_SPACE_SHARED_CLUSTER}, {".v8", MC_UNSUP, 0}, {".async", MC_UNSUP, 0},
    {".bulk", MC_UNSUP, 0}, {".tensormap", MC_IGNORE, 0} /* prefetch.tensormap */,
    {".pack", MC_UNSUP, 0},
    {".rs", MC_UNSUP, 0}, {".satfinite", MC_UNSUP, 0}, {".proxy", MC_UNSUP, 0},
    {".mbarrier_init", MC_UNSUP, 0}, {".multicast::cluster", MC_UNSUP, 0},
};

static const gl_ptx_op_def ops[] = {
    {"mov", K_ALU, GL_PTX_OP_MOV, 1, 0}, {"cvt", K_ALU, GL_PTX_OP_CVT, 1, 0},
    {"add", K_ALU, GL_PTX_OP_ADD, 2, 0}, {"sub", K_ALU, GL_PTX_OP_SUB, 2, 0},
    {"addc", K_ALU, GL_PTX_OP_ADD, 2, 1}, {"subc", K_ALU, GL_PTX_OP_SUB, 2, 1},
    {"mul", K_ALU, GL_PTX_OP_MUL, 2, 0}, {"mad", K_ALU, GL_PTX_OP_MAD, 3, 0},
    {"madc", K_ALU, GL_PTX_OP_MAD, 3, 1}, {"mul24", K_ALU, GL_PTX_OP_MUL24, 2, 0},
    {"mad24", K_ALU, GL_PTX_OP_MAD24, 3, 0}, {"sad", K_ALU, GL_PTX_OP_SAD, 3, 0},
    {"div", K_ALU, GL_PTX_OP_DIV, 2, 0}, {"rem", K_ALU, GL_PTX_OP_REM, 2, 0},
    {"abs", K_ALU, GL_PTX_OP_ABS, 1, 0}, {"neg", K_ALU, GL_PTX_OP_NEG, 1, 0},
    {"min", K_ALU, GL_PTX_OP_MIN, 2, 0}, {"max", K_ALU, GL_PTX_OP_MAX, 2, 0},
    {"fma", K_ALU, GL_PTX_OP_FMA, 3, 0}, {"rcp", K_ALU, GL_PTX_OP_RCP, 1, 0},
    {"sqrt", K_ALU, GL_PTX_OP_SQRT, 1, 0}, {"rsqrt", K_ALU, GL_PTX_OP_RSQRT, 1, 0},
    {"sin", K_ALU, GL_PTX_OP_SIN, 1, 0}, {"cos", K_ALU, GL_PTX_OP_COS, 1, 0},
    {"lg2", K_ALU, GL_PTX_OP_LG2, 1, 0}, {"ex2", K_ALU, GL_PTX_OP_EX2, 1, 0},
    {"tanh", K_ALU, GL_PTX_OP_TANH, 1, 0}, {"copysign", K_ALU, GL_PTX_OP_COPYSIGN, 2, 0},
    {"testp", K_ALU, GL_PTX_OP_TESTP, 1, 0}, {"and", K_ALU, GL_PTX_OP_AND, 2, 0},
    {"or", K_ALU, GL_PTX_OP_OR, 2, 0}, {"xor", K_ALU, GL_PTX_OP_XOR, 2, 0},
    {"not", K_ALU, GL_PTX_OP_NOT, 1, 0}, {"cnot", K_ALU, GL_PTX_OP_CNOT, 1, 0},
    {"shl", K_ALU, GL_PTX_OP_SHL, 2, 0}, {"shr", K_ALU, GL_PTX_OP_SHR, 2, 0},
    {"popc", K_ALU, GL_PTX_OP_POPC, 1, 0}, {"clz", K_ALU, GL_PTX_OP_CLZ, 1, 0},
    {"brev", K_ALU, GL_PTX_OP_BREV, 1, 0}, {"bfe", K_ALU, GL_PTX_OP_BFE, 3, 0},
    {"bfi", K_ALU, GL_PTX_OP_BFI, 4, 0}, {"bfind", K_ALU, GL_PTX_OP_BFIND, 1, 0},
    {"prmt", K_ALU, GL_PTX_OP_PRMT, 3, 0}, {"shf", K_ALU, GL_PTX_OP_SHF, 3, 0},
    {"dp4a", K_ALU, GL_PTX_OP_DP4A, 3, 0}, {"dp2a", K_ALU, GL_PTX_OP_DP2A, 3, 0},
    {"setp", K_ALU, GL_PTX_OP_SETP, 2, 0}, {"set", K_ALU, GL_PTX_OP_SET, 2, 0},
    {"selp", K_ALU, GL_PTX_OP_SELP, 3, 0}, {"slct", K_ALU, GL_PTX_OP_SLCT, 3, 0},
    {"ld", K_LD, GL_PTX_OP_LD, 0, 0}, {"ldu", K_LD, GL_PTX_OP_LD, 0, 0},
    {"st", K_ST, GL_PTX_OP_ST, 0, 0}, {"cvta", K_CVTA, GL_PTX_OP_CVTA, 0, 0},
    {"atom", K_ATOM, GL_PTX_OP_ATOM, 0, 0}, {"red", K_RED, GL_PTX_OP_RED, 0, 0},
    {"bra", K_BRA, GL_PTX_OP_BRA, 0, 0}, {"call", K_CALL, GL_PTX_OP_CALL, 0, 0},
    {"ret", K_RET, GL_PTX_OP_RET, 0, 0}, {"exit", K_EXIT, GL_PTX_OP_EXIT, 0, 0},
    {"bar", K_BAR, GL_PTX_OP_BAR, 0, 0}, {"barrier", K_BAR, GL_PTX_OP_BAR, 0, 0},
    {"membar", K_MEMBAR, GL_PTX_OP_MEMBAR, 0, 0}, {"fence", K_FENCE, GL_PTX_OP_MEMBAR, 0, 0},
    {"shfl", K_SHFL, GL_PTX_OP_SHFL, 0, 0}, {"vote", K_VOTE, GL_PTX_OP_VOTE, 0, 0},
    {"match", K_MATCH, GL_PTX_OP_MATCH, 0, 0},
    {"activemask", K_ACTIVEMASK, GL_PTX_OP_ACTIVEMASK, 0, 0},
    {"trap", K_TRAP, GL_PTX_OP_TRAP, 0, 0},
    {"nanosleep", K_NANOSLEEP, GL_PTX_OP_NANOSLEEP, 0, 0},
    {"prefetch", K_PREFETCH, GL_PTX_OP_PREFETCH, 0, 0},
    {"prefetchu", K_PREFETCH, GL_PTX_OP_PREFETCH, 0, 0},
    {"mapa", K_MAPA, GL_PTX_OP_MAPA, 0, 0},
    {"getctarank", K_GETCTARANK, GL_PTX_OP_GETCTARANK, 0, 0},
    /* cp, mbarrier, redux, elect, setmaxnreg, griddepcontrol, createpolicy
     * and the fence.proxy/.mbarrier_init forms: ptx_insn_async.c. */
    /* Valid PTX outside the emulated device's instruction set. */
    {"tex", K_UNSUP, 0, 0, 0}, {"tld4", K_UNSUP, 0, 0, 0}, {"txq", K_UNSUP, 0, 0, 0},
    {"suld", K_UNSUP, 0, 0, 0}, {"sust", K_UNSUP, 0, 0, 0}, {"sured", K_UNSUP, 0, 0, 0},
    {"suq", K_UNSUP, 0, 0, 0}, {"mma", K_UNSUP, 0, 0, 0}, {"wmma", K_UNSUP, 0, 0, 0},
    {"wgmma", K_UNSUP, 0, 0, 0}, {"ldmatrix", K_UNSUP, 0, 0, 0},
    {"stmatrix", K_UNSUP, 0, 0, 0}, {"movmatrix", K_UNSUP, 0, 0, 0},
    {"multimem", K_UNSUP, 0, 0, 0},
    {"istypep", K_UNSUP, 0, 0, 0}, {"isspacep", K_UNSUP, 0, 0, 0},
    {"vadd", K_UNSUP, 0, 0, 0}, {"vsub", K_UNSUP, 0, 0, 0}, {"vabsdiff", K_UNSUP, 0, 0, 0},
    {"vmin", K_UNSUP, 0, 0, 0}, {"vmax", K_UNSUP, 0, 0, 0}, {"vshl", K_UNSUP, 0, 0, 0},
    {"vshr", K_UNSUP, 0, 0, 0}, {"vmad", K_UNSUP, 0, 0, 0}, {"vset", K_UNSUP, 0, 0, 0},
    {"vadd2", K_UNSUP, 0, 0, 0}, {"vsub2", K_UNSUP, 0, 0, 0}, {"vavrg2", K_UNSUP, 0, 0, 0},
    {"vabsdiff2", K_UNSUP, 0, 0, 0}, {"vmin2", K_UNSUP, 0, 0, 0},
    {"vmax2", K_UNSUP, 0, 0, 0}, {"vset2", K_UNSUP, 0, 0, 0}, {"vadd4", K_UNSUP, 0, 0, 0},
    {"vsub4", K_UNSUP, 0, 0, 0}, {"vavrg4", K_UNSUP, 0, 0, 0},
    {"vabsdiff4", K_UNSUP, 0, 0, 0}, {"vmin4", K_UNSUP, 0, 0, 0},
    {"vmax4", K_UNSUP, 0, 0, 0}, {"vset4", K_UNSUP, 0, 0, 0}, {"brx", K_UNSUP, 0, 0, 0},
    {"applypriority", K_UNSUP, 0, 0, 0},
    {"discard", K_UNSUP, 0, 0, 0},
    {"tensormap", K_UNSUP, 0, 0, 0}, {"stacksave", K_UNSUP, 0, 0, 0},
    {"stackrestore", K_UNSUP, 0, 0, 0}, {"alloca", K_UNSUP, 0, 0, 0},
    {"pmevent", K_UNSUP, 0, 0, 0}, {"szext", K_UNSUP, 0, 0, 0},
    {"bmsk", K_UNSUP, 0, 0, 0}, {"lop3", K_UNSUP, 0, 0, 0}, {"fns", K_UNSUP, 0, 0, 0},
    {"clusterlaunchcontrol", K_UNSUP, 0, 0, 0}, {"tcgen05", K_UNSUP, 0, 0, 0},
    {"brkpt", K_UNSUP, 0, 0, 0}, {"ex2x", K_UNSUP, 0, 0, 0},
};

const gl_ptx_op_def *gl_ptx_find_op(const char *s, uint32_t n) {
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strlen(ops[i].s) == n && memcmp(ops[i].s, s, n) == 0) return &ops[i];
  return NULL;
}

const gl_ptx_mod_def *gl_ptx_find_mod(const char *s, uint32_t n) {
  for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
    if (mods[i].s[1] == s[1] && strlen(mods[i].s) == n && memcmp(mods[i].s, s, n) == 0)
      return &mods[i];
  return NULL;
}

static const struct {
  const char *s;
  uint8_t sreg;
} sregs[] = {
    {"%tid.x", GL_PTX_SR_TID_X}, {"%tid.y", GL_PTX_SR_TID_Y}, {"%tid.z", GL_PTX_SR_TID_Z},
    {"%ntid.x", GL_PTX_SR_NTID_X}, {"%ntid.y", GL_PTX_SR_NTID_Y},
    {"%ntid.z", GL_PTX_SR_NTID_Z}, {"%ctaid.x", GL_PTX_SR_CTAID_X},
    {"%ctaid.y", GL_PTX_SR_CTAID_Y}, {"%ctaid.z", GL_PTX_SR_CTAID_Z},
    {"%nctaid.x", GL_PTX_SR_NCTAID_X}, {"%nctaid.y", GL_PTX_SR_NCTAID_Y},
    {"%nctaid.z", GL_PTX_SR_NCTAID_Z}, {"%laneid", GL_PTX_SR_LANEID},
    {"%warpid", GL_PTX_SR_WARPID}, {"%nwarpid", GL_PTX_SR_NWARPID},
    {"%smid", GL_PTX_SR_SMID}, {"%nsmid", GL_PTX_SR_NSMID}, {"%gridid", GL_PTX_SR_GRIDID},
    {"%clock", GL_PTX_SR_CLOCK}, {"%clock64", GL_PTX_SR_CLOCK64},
    {"%clock_hi", GL_PTX_SR_CLOCK_HI}, {"%globaltimer", GL_PTX_SR_GLOBALTIMER},
    {"%globaltimer_lo", GL_PTX_SR_GLOBALTIMER_LO},
    {"%globaltimer_hi", GL_PTX_SR_GLOBALTIMER_HI}, {"%lanemask_eq", GL_PTX_SR_LANEMASK_EQ},
    {"%lanemask_le", GL_PTX_SR_LANEMASK_LE}, {"%lanemask_lt", GL_PTX_SR_LANEMASK_LT},
    {"%lanemask_ge", GL_PTX_SR_LANEMASK_GE}, {"%lanemask_gt", GL_PTX_SR_LANEMASK_GT},
    {"%dynamic_smem_size", GL_PTX_SR_DYNAMIC_SMEM_SIZE},
    {"%total_smem_size", GL_PTX_SR_TOTAL_SMEM_SIZE},
    {"%cluster_ctarank", GL_PTX_SR_CLUSTER_CTARANK},
    {"%cluster_nctarank", GL_PTX_SR_CLUSTER_NCTARANK},
    {"%cluster_ctaid.x", GL_PTX_SR_CLUSTER_CTAID_X},
    {"%cluster_ctaid.y", GL_PTX_SR_CLUSTER_CTAID_Y},
    {"%cluster_ctaid.z", GL_PTX_SR_CLUSTER_CTAID_Z},
    {"%cluster_nctaid.x", GL_PTX_SR_CLUSTER_NCTAID_X},
    {"%cluster_nctaid.y", GL_PTX_SR_CLUSTER_NCTAID_Y},
    {"%cluster_nctaid.z", GL_PTX_SR_CLUSTER_NCTAID_Z},
    {"%clusterid.x", GL_PTX_SR_CLUSTERID_X}, {"%clusterid.y", GL_PTX_SR_CLUSTERID_Y},
    {"%clusterid.z", GL_PTX_SR_CLUSTERID_Z}, {"%nclusterid.x", GL_PTX_SR_NCLUSTERID_X},
    {"%nclusterid.y", GL_PTX_SR_NCLUSTERID_Y}, {"%nclusterid.z", GL_PTX_SR_NCLUSTERID_Z},
    {"%is_explicit_cluster", GL_PTX_SR_IS_EXPLICIT_CLUSTER},
};

int gl_ptx_find_sreg(const char *s, uint32_t n) {
  for (size_t i = 0; i < sizeof sregs / sizeof sregs[0]; i++)
    if (strlen(sregs[i].s) == n && memcmp(sregs[i].s, s, n) == 0) return sregs[i].sreg;
  /* %envreg0 .. %envreg31 */
  if (n > 7 && n <= 9 && memcmp(s, "%envreg", 7) == 0) {
    unsigned v = 0;
    for (uint32_t i = 7; i < n; i++) {
      if (s[i] < '0' || s[i] > '9') return -1;
      v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (n == 9 && s[7] == '0') return -1; /* %envreg01 */
    if (v > 31) return -1;
    return v == 1 ? GL_PTX_SR_ENVREG1 : v == 2 ? GL_PTX_SR_ENVREG2 : GL_PTX_SR_ENVREG_ZERO;
  }
  return -1;
}

