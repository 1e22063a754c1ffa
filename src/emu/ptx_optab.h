/*
 * ptx_optab.h - the PTX instruction tables (internal to the PTX parser):
 * instruction base names with their decoder kind, mnemonic modifiers with
 * their class, and special register names. ptx_insn.c decodes with them.
 */
#ifndef GL_EMU_PTX_OPTAB_H
#define GL_EMU_PTX_OPTAB_H

#include <stdint.h>

/* ==== Mnemonic modifiers ================================================== */

typedef enum gl_ptx_mod_class {
  MC_RND = 1, /* val: gl_ptx_rnd */
  MC_FLAG,    /* val: GL_PTX_F_* */
  MC_SPACE,   /* val: gl_ptx_space */
  MC_VEC,     /* val: 2 or 4 */
  MC_IGNORE,  /* cache operators, scopes, memory ordering: no effect here */
  MC_HINT,    /* .L2::cache_hint: one extra trailing operand, ignored */
  MC_WORD,    /* val: gl_ptx_word_id, interpreted by the decoder */
  MC_UNSUP    /* a valid modifier whose feature the device lacks */
} gl_ptx_mod_class;

enum gl_ptx_word_id {
  W_LO = 1, W_HI, W_WIDE, W_EQ, W_NE, W_LT, W_LE, W_GT, W_GE, W_LS, W_HS, W_EQU, W_NEU,
  W_LTU, W_LEU, W_GTU, W_GEU, W_NUM, W_NAN, W_AND, W_OR, W_XOR, W_ADD, W_INC, W_DEC,
  W_MIN, W_MAX, W_EXCH, W_CAS, W_UP, W_DOWN, W_BFLY, W_IDX, W_ALL, W_ANY, W_UNI,
  W_BALLOT, W_SYNC, W_ARRIVE, W_RED, W_POPC, W_WARP, W_TO, W_L, W_R, W_WRAP, W_F4E,
  W_B4E, W_RC8, W_ECL, W_ECR, W_RC16, W_FINITE, W_INFINITE, W_NUMBER, W_NOTANUMBER,
  W_NORMAL, W_SUBNORMAL, W_XORSIGN, W_ABS, W_CLUSTER, W_WAIT
};

typedef struct gl_ptx_mod_def {
  const char *s;
  uint8_t cls;
  uint16_t val;
} gl_ptx_mod_def;

/* ==== Opcodes ============================================================= */

typedef enum gl_ptx_op_kind {
  K_ALU = 1, K_LD, K_ST, K_CVTA, K_ATOM, K_RED, K_BRA, K_CALL, K_RET, K_EXIT, K_BAR,
  K_MEMBAR, K_FENCE, K_SHFL, K_VOTE, K_MATCH, K_ACTIVEMASK, K_TRAP, K_NANOSLEEP,
  K_PREFETCH, K_MAPA, K_GETCTARANK, K_UNSUP
} gl_ptx_op_kind;

typedef struct gl_ptx_op_def {
  const char *s;
  uint8_t kind;  /* gl_ptx_op_kind */
  uint8_t op;    /* gl_ptx_op */
  uint8_t nsrc;  /* K_ALU: sources */
  uint8_t carry; /* addc/subc/madc */
} gl_ptx_op_def;

/* Lookups by exact text (n bytes); NULL / -1 when unknown. A modifier
 * includes its leading dot. */
const gl_ptx_op_def *gl_ptx_find_op(const char *s, uint32_t n);
const gl_ptx_mod_def *gl_ptx_find_mod(const char *s, uint32_t n);
int gl_ptx_find_sreg(const char *s, uint32_t n);

#endif /* GL_EMU_PTX_OPTAB_H */
