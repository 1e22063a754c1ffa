/*
 * ptx_ir.h - the emulated device's intermediate form of a PTX module.
 *
 * The PTX parser (ptx_parse.c) turns module text into a gl_ptx_module: one
 * flat array of decoded instructions, every name already resolved to a
 * number (register index, instruction index, byte offset or address). The
 * executor (exec.c) and its ALU (alu.c) run that array; they never look at
 * names or text again. This header is the contract between the three, so
 * every field says who writes it and what it means.
 *
 * Values. Every register, of every PTX type, is one 64-bit slot per thread
 * (predicates too: 0 or 1). Writers store a value extended to 64 bits: sign
 * extension for .s8-.s64, zero extension for everything else (.b, .u, .f16
 * bits, .f32 bits, .pred). Readers use only the low bits of the width of
 * the type they read with, so a register's declared width never matters.
 * Floats are stored as their IEEE bit patterns (f32 in the low 32 bits, f16
 * in the low 16, f16x2 with element 0 in bits 0-15).
 *
 * Memory map of the emulated device (generic addresses, 64 bit):
 *   [GL_EMU_SHARED_WINDOW, +4 GiB)  the running block's shared memory
 *   [GL_EMU_LOCAL_WINDOW,  +4 GiB)  the running thread's local memory
 *   [GL_EMU_PARAM_WINDOW,  +4 GiB)  the kernel's parameter buffer (read-only)
 *   anything else                    global memory: the lease's region and
 *                                    each loaded module's .global/.const data
 * A state-space address (ld.shared [r], mov r, shared_var) is the offset in
 * that space; cvta adds or subtracts the window base.
 *
 * Shared memory of a thread-block cluster (.shared::cluster, sm_90): an
 * offset below GL_EMU_CLUSTER_STRIDE (16 MiB, more than any block's shared
 * memory) is the running block's own shared memory, so every .shared::cta
 * address is also a .shared::cluster address meaning the same bytes; the
 * shared memory of the block of cluster rank r is at
 * GL_EMU_CLUSTER_SHARED(r) + offset, (r + 1) * 16 MiB up. mapa produces
 * that form (for the own rank too); the generic form adds
 * GL_EMU_SHARED_WINDOW like any shared address, so cvta is unchanged. A
 * launch without clusters is a cluster of one block (rank 0).
 */
#ifndef GL_EMU_PTX_IR_H
#define GL_EMU_PTX_IR_H

#include <stddef.h>
#include <stdint.h>

#define GL_EMU_SHARED_WINDOW 0x0000700000000000ull
#define GL_EMU_LOCAL_WINDOW 0x0000710000000000ull
#define GL_EMU_PARAM_WINDOW 0x0000720000000000ull
#define GL_EMU_WINDOW_SIZE 0x0000000100000000ull
#define GL_EMU_CLUSTER_SHIFT 24
#define GL_EMU_CLUSTER_STRIDE (1ull << GL_EMU_CLUSTER_SHIFT)
#define GL_EMU_CLUSTER_SHARED(rank) (((uint64_t)(rank) + 1) << GL_EMU_CLUSTER_SHIFT)

#define GL_PTX_NOREG UINT32_MAX /* "no register": '_' sink, or no base */
#define GL_PTX_REG_CC 0u        /* register 0 is the carry flag (.cc) */

/* ---- Types -------------------------------------------------------------- */

typedef enum gl_ptx_type {
  GL_PTX_T_NONE = 0,
  GL_PTX_T_PRED,
  GL_PTX_T_B8, GL_PTX_T_B16, GL_PTX_T_B32, GL_PTX_T_B64, GL_PTX_T_B128,
  GL_PTX_T_U8, GL_PTX_T_U16, GL_PTX_T_U32, GL_PTX_T_U64,
  GL_PTX_T_S8, GL_PTX_T_S16, GL_PTX_T_S32, GL_PTX_T_S64,
  GL_PTX_T_F16, GL_PTX_T_F16X2, GL_PTX_T_BF16, GL_PTX_T_BF16X2,
  GL_PTX_T_F32, GL_PTX_T_F64,
  GL_PTX_T_COUNT
} gl_ptx_type;

/* Width in bytes (pred: 1, none: 0). */
static inline unsigned gl_ptx_type_size(gl_ptx_type t) {
  static const unsigned char sz[GL_PTX_T_COUNT] = {
      0, 1, 1, 2, 4, 8, 16, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 2, 4, 4, 8};
  return t < GL_PTX_T_COUNT ? sz[t] : 0;
}
static inline int gl_ptx_type_is_signed(gl_ptx_type t) {
  return t >= GL_PTX_T_S8 && t <= GL_PTX_T_S64;
}
static inline int gl_ptx_type_is_float(gl_ptx_type t) {
  return t >= GL_PTX_T_F16 && t <= GL_PTX_T_F64;
}

/* ---- State spaces ------------------------------------------------------- */

typedef enum gl_ptx_space {
  GL_PTX_SPACE_GENERIC = 0, /* no space suffix: a generic address */
  GL_PTX_SPACE_GLOBAL,
  GL_PTX_SPACE_SHARED, /* .shared and .shared::cta */
  GL_PTX_SPACE_LOCAL,
  GL_PTX_SPACE_CONST,
  GL_PTX_SPACE_PARAM, /* kernel parameters: read-only, block-wide */
  GL_PTX_SPACE_FPARAM, /* a .func's parameters and call arguments: per thread,
                         stored in the thread's local memory (see below) */
  GL_PTX_SPACE_SHARED_CLUSTER /* .shared::cluster: own or a cluster peer's
                         shared memory (the encoding above) */
} gl_ptx_space;

/* ---- Special registers -------------------------------------------------- */

typedef enum gl_ptx_sreg {
  GL_PTX_SR_TID_X, GL_PTX_SR_TID_Y, GL_PTX_SR_TID_Z,
  GL_PTX_SR_NTID_X, GL_PTX_SR_NTID_Y, GL_PTX_SR_NTID_Z,
  GL_PTX_SR_CTAID_X, GL_PTX_SR_CTAID_Y, GL_PTX_SR_CTAID_Z,
  GL_PTX_SR_NCTAID_X, GL_PTX_SR_NCTAID_Y, GL_PTX_SR_NCTAID_Z,
  GL_PTX_SR_LANEID, GL_PTX_SR_WARPID, GL_PTX_SR_NWARPID,
  GL_PTX_SR_SMID, GL_PTX_SR_NSMID, GL_PTX_SR_GRIDID,
  GL_PTX_SR_CLOCK, GL_PTX_SR_CLOCK64, GL_PTX_SR_CLOCK_HI,
  GL_PTX_SR_GLOBALTIMER, GL_PTX_SR_GLOBALTIMER_LO, GL_PTX_SR_GLOBALTIMER_HI,
  GL_PTX_SR_LANEMASK_EQ, GL_PTX_SR_LANEMASK_LE, GL_PTX_SR_LANEMASK_LT,
  GL_PTX_SR_LANEMASK_GE, GL_PTX_SR_LANEMASK_GT,
  GL_PTX_SR_DYNAMIC_SMEM_SIZE, GL_PTX_SR_TOTAL_SMEM_SIZE,
  /* %envreg1/%envreg2: high and low half of the cooperative grid's sync
   * workspace address (0 in other launches); %envreg0, 3-31: 0 */
  GL_PTX_SR_ENVREG1, GL_PTX_SR_ENVREG2, GL_PTX_SR_ENVREG_ZERO,
  /* thread-block clusters (a launch without clusters: clusters of 1) */
  GL_PTX_SR_CLUSTER_CTARANK, GL_PTX_SR_CLUSTER_NCTARANK,
  GL_PTX_SR_CLUSTER_CTAID_X, GL_PTX_SR_CLUSTER_CTAID_Y, GL_PTX_SR_CLUSTER_CTAID_Z,
  GL_PTX_SR_CLUSTER_NCTAID_X, GL_PTX_SR_CLUSTER_NCTAID_Y, GL_PTX_SR_CLUSTER_NCTAID_Z,
  GL_PTX_SR_CLUSTERID_X, GL_PTX_SR_CLUSTERID_Y, GL_PTX_SR_CLUSTERID_Z,
  GL_PTX_SR_NCLUSTERID_X, GL_PTX_SR_NCLUSTERID_Y, GL_PTX_SR_NCLUSTERID_Z,
  GL_PTX_SR_IS_EXPLICIT_CLUSTER,
  GL_PTX_SR_COUNT
} gl_ptx_sreg;

/* ---- Opcodes ------------------------------------------------------------
 * ALU: executed by gl_emu_alu_exec (alu.h), lane-wise, no memory.
 * MACHINE: executed by the executor itself. */
typedef enum gl_ptx_op {
  GL_PTX_OP_NOP = 0,
  /* ALU */
  GL_PTX_OP_MOV,      /* scalar mov d, a (a: reg or imm). Vector pack or
                         unpack forms and sreg/symbol sources: MACHINE */
  GL_PTX_OP_CVT,      /* cvt{.rnd}{.ftz}{.sat}.type.type2 d, a */
  GL_PTX_OP_ADD, GL_PTX_OP_SUB, GL_PTX_OP_MUL, GL_PTX_OP_MAD,
  GL_PTX_OP_MUL24, GL_PTX_OP_MAD24, GL_PTX_OP_SAD,
  GL_PTX_OP_DIV, GL_PTX_OP_REM, GL_PTX_OP_ABS, GL_PTX_OP_NEG,
  GL_PTX_OP_MIN, GL_PTX_OP_MAX, GL_PTX_OP_FMA,
  GL_PTX_OP_RCP, GL_PTX_OP_SQRT, GL_PTX_OP_RSQRT,
  GL_PTX_OP_SIN, GL_PTX_OP_COS, GL_PTX_OP_LG2, GL_PTX_OP_EX2, GL_PTX_OP_TANH,
  GL_PTX_OP_COPYSIGN, GL_PTX_OP_TESTP,
  GL_PTX_OP_AND, GL_PTX_OP_OR, GL_PTX_OP_XOR, GL_PTX_OP_NOT, GL_PTX_OP_CNOT,
  GL_PTX_OP_SHL, GL_PTX_OP_SHR, GL_PTX_OP_POPC, GL_PTX_OP_CLZ, GL_PTX_OP_BREV,
  GL_PTX_OP_BFE, GL_PTX_OP_BFI, GL_PTX_OP_BFIND, GL_PTX_OP_PRMT, GL_PTX_OP_SHF,
  GL_PTX_OP_DP4A, GL_PTX_OP_DP2A,
  GL_PTX_OP_SETP, GL_PTX_OP_SET, GL_PTX_OP_SELP, GL_PTX_OP_SLCT,
  GL_PTX_OP_ALU_LAST = GL_PTX_OP_SLCT,
  /* MACHINE */
  GL_PTX_OP_LD,       /* ld, ldu: d (scalar or vector), [addr] */
  GL_PTX_OP_ST,       /* st: [addr], a (scalar or vector) */
  GL_PTX_OP_CVTA,     /* cvta.space d, a (to generic) / cvta.to.space */
  GL_PTX_OP_ATOM,     /* atom.space.op.type d, [addr], b {, c} */
  GL_PTX_OP_RED,      /* red.space.op.type [addr], b */
  GL_PTX_OP_BRA,      /* bra target (src[0] LABEL) */
  GL_PTX_OP_CALL,     /* call (see gl_ptx_call) */
  GL_PTX_OP_RET,
  GL_PTX_OP_EXIT,
  GL_PTX_OP_BAR,      /* bar.sync / barrier.sync / bar.arrive / bar.red */
  GL_PTX_OP_MEMBAR,   /* membar.*, fence.*: no-op on the emulator */
  GL_PTX_OP_SHFL,     /* shfl.sync.mode.b32 d{|p}, a, b, c, membermask */
  GL_PTX_OP_VOTE,     /* vote.sync.mode{.pred|.b32} d, {!}p, membermask */
  GL_PTX_OP_MATCH,    /* match.sync.any/all.b32/.b64 d{|p}, a, membermask */
  GL_PTX_OP_ACTIVEMASK,
  GL_PTX_OP_TRAP,
  GL_PTX_OP_NANOSLEEP,
  GL_PTX_OP_PREFETCH, /* prefetch, prefetchu: no-op */
  GL_PTX_OP_BARCLUSTER, /* barrier.cluster.arrive / .wait (mode) */
  GL_PTX_OP_MAPA,     /* mapa{.shared::cluster}.u32/.u64 d, a, rank */
  GL_PTX_OP_GETCTARANK, /* getctarank{.shared::cluster}.u32/.u64 d, a */
  /* matrix instructions: operands as mma.h describes */
  GL_PTX_OP_MMA,       /* mma.sync.aligned */
  GL_PTX_OP_WGMMA,     /* wgmma.mma_async.sync.aligned */
  GL_PTX_OP_LDMATRIX, GL_PTX_OP_STMATRIX, GL_PTX_OP_MOVMATRIX,
  GL_PTX_OP_RLIST,     /* register list carrier of an mma/wgmma: never run */
  /* asynchronous copies, mbarriers, warp reductions (ptx_insn_async.c;
   * exec_async.c, exec_mbar.c, exec_redux.c) */
  GL_PTX_OP_CPASYNC,  /* cp.async.ca/.cg.shared.global [d], [s], cp-size ... */
  GL_PTX_OP_CPBULK,   /* cp.async.bulk (mode: GL_PTX_BULK_*) */
  GL_PTX_OP_MBARRIER, /* mbarrier.*, cp.async.mbarrier.arrive (mode) */
  GL_PTX_OP_REDUX,    /* redux.sync.op.type d, a, membermask */
  GL_PTX_OP_ELECT,    /* elect.sync d|p, membermask */
  GL_PTX_OP_CPTENSOR, /* cp.async.bulk.tensor.Nd ... .tile (mode: G2S or S2G) */
  GL_PTX_OP_CPREDUCE, /* cp.reduce.async.bulk{.tensor} (mode: gl_ptx_atom_op) */
  GL_PTX_OP_STASYNC,  /* st.async ... .mbarrier::complete_tx::bytes [a], b, [mbar] */
  GL_PTX_OP_REDASYNC, /* red.async ... .op.type [a], b, [mbar] (mode: gl_ptx_atom_op) */
  GL_PTX_OP_COUNT
} gl_ptx_op;

/* ---- Modifiers (gl_ptx_insn.mode: meaning depends on the opcode) --------- */

typedef enum gl_ptx_rnd {
  GL_PTX_RND_NONE = 0, /* none written: the instruction's default */
  GL_PTX_RND_RN, GL_PTX_RND_RZ, GL_PTX_RND_RM, GL_PTX_RND_RP, /* float */
  GL_PTX_RND_RNI, GL_PTX_RND_RZI, GL_PTX_RND_RMI, GL_PTX_RND_RPI /* to int */
} gl_ptx_rnd;

/* mode for MUL, MAD (integer types): */
enum { GL_PTX_MUL_LO = 0, GL_PTX_MUL_HI, GL_PTX_MUL_WIDE };
/* mode for SETP and SET: the comparison */
typedef enum gl_ptx_cmp {
  GL_PTX_CMP_EQ, GL_PTX_CMP_NE, GL_PTX_CMP_LT, GL_PTX_CMP_LE, GL_PTX_CMP_GT,
  GL_PTX_CMP_GE, GL_PTX_CMP_LO, GL_PTX_CMP_LS, GL_PTX_CMP_HI, GL_PTX_CMP_HS,
  GL_PTX_CMP_EQU, GL_PTX_CMP_NEU, GL_PTX_CMP_LTU, GL_PTX_CMP_LEU,
  GL_PTX_CMP_GTU, GL_PTX_CMP_GEU, GL_PTX_CMP_NUM, GL_PTX_CMP_NAN
} gl_ptx_cmp;
/* boolop for SETP and SET (the optional .and/.or/.xor with src[2]): */
enum { GL_PTX_BOOL_NONE = 0, GL_PTX_BOOL_AND, GL_PTX_BOOL_OR, GL_PTX_BOOL_XOR };
/* mode for TESTP */
enum { GL_PTX_TESTP_FINITE, GL_PTX_TESTP_INFINITE, GL_PTX_TESTP_NUMBER,
       GL_PTX_TESTP_NOTANUMBER, GL_PTX_TESTP_NORMAL, GL_PTX_TESTP_SUBNORMAL };
/* mode for PRMT: 0 = default (selector in src[2]) */
enum { GL_PTX_PRMT_DEFAULT = 0, GL_PTX_PRMT_F4E, GL_PTX_PRMT_B4E, GL_PTX_PRMT_RC8,
       GL_PTX_PRMT_ECL, GL_PTX_PRMT_ECR, GL_PTX_PRMT_RC16 };
/* mode for SHF (flags carry GL_PTX_F_CLAMP or not = wrap) */
enum { GL_PTX_SHF_L = 0, GL_PTX_SHF_R };
/* mode for ATOM and RED */
typedef enum gl_ptx_atom_op {
  GL_PTX_ATOM_ADD, GL_PTX_ATOM_MIN, GL_PTX_ATOM_MAX, GL_PTX_ATOM_EXCH,
  GL_PTX_ATOM_CAS, GL_PTX_ATOM_AND, GL_PTX_ATOM_OR, GL_PTX_ATOM_XOR,
  GL_PTX_ATOM_INC, GL_PTX_ATOM_DEC
} gl_ptx_atom_op;
/* mode for SHFL */
enum { GL_PTX_SHFL_UP, GL_PTX_SHFL_DOWN, GL_PTX_SHFL_BFLY, GL_PTX_SHFL_IDX };
/* mode for VOTE (type is PRED for all/any/uni, B32 for ballot) */
enum { GL_PTX_VOTE_ALL, GL_PTX_VOTE_ANY, GL_PTX_VOTE_UNI, GL_PTX_VOTE_BALLOT };
/* mode for MATCH */
enum { GL_PTX_MATCH_ANY, GL_PTX_MATCH_ALL };
/* mode for BAR */
enum { GL_PTX_BAR_SYNC, GL_PTX_BAR_ARRIVE, GL_PTX_BAR_RED_POPC,
       GL_PTX_BAR_RED_AND, GL_PTX_BAR_RED_OR };
/* mode for BARCLUSTER */
enum { GL_PTX_BARCLUSTER_ARRIVE, GL_PTX_BARCLUSTER_WAIT };
/* mode for CVTA: direction (space holds the non-generic space) */
enum { GL_PTX_CVTA_TO_GENERIC = 0, GL_PTX_CVTA_TO_SPACE };
/* mode for MBARRIER: the operation in the low 4 bits, modifiers above */
enum { GL_PTX_MBAR_INIT, GL_PTX_MBAR_INVAL, GL_PTX_MBAR_ARRIVE, GL_PTX_MBAR_EXPECT_TX,
       GL_PTX_MBAR_COMPLETE_TX, GL_PTX_MBAR_TEST_WAIT, GL_PTX_MBAR_TRY_WAIT,
       GL_PTX_MBAR_PENDING_COUNT, GL_PTX_MBAR_CP_ARRIVE, GL_PTX_MBAR_CP_ARRIVE_NOINC };
#define GL_PTX_MBAR_OP(mode) ((mode) & 15u)
#define GL_PTX_MBAR_DROP 0x10u       /* ARRIVE: arrive_drop */
#define GL_PTX_MBAR_NOCOMPLETE 0x20u /* ARRIVE: .noComplete */
#define GL_PTX_MBAR_WITH_TX 0x40u    /* ARRIVE: .expect_tx (tx count in src[2]) */
#define GL_PTX_MBAR_PARITY 0x80u     /* TEST_WAIT, TRY_WAIT: .parity */
/* mode for CPBULK: the direction */
enum { GL_PTX_BULK_G2S, /* global -> shared (space: ::cta or ::cluster), mbarrier */
       GL_PTX_BULK_S2S, /* shared::cta -> shared::cluster, mbarrier */
       GL_PTX_BULK_S2G  /* shared::cta -> global, bulk async-group */ };

/* flags (gl_ptx_insn.flags) */
#define GL_PTX_F_FTZ 0x0001u     /* .ftz */
#define GL_PTX_F_SAT 0x0002u     /* .sat */
#define GL_PTX_F_APPROX 0x0004u  /* .approx */
#define GL_PTX_F_FULL 0x0008u    /* .full (div.full.f32) */
#define GL_PTX_F_CC 0x0010u      /* .cc: writes carry to register GL_PTX_REG_CC */
#define GL_PTX_F_CARRY_IN 0x0020u /* addc/subc/madc: reads carry from GL_PTX_REG_CC */
#define GL_PTX_F_UNI 0x0040u     /* .uni on bra/call/ret */
#define GL_PTX_F_NAN 0x0080u     /* .NaN on min/max */
#define GL_PTX_F_CLAMP 0x0100u   /* .clamp (shf, shfl is always clamp-like) */
#define GL_PTX_F_SHIFTAMT 0x0200u /* .shiftamt on bfind */
#define GL_PTX_F_RELU 0x0400u    /* .relu on cvt/min/max of f16 */
#define GL_PTX_F_XORSIGN_ABS 0x0800u /* .xorsign.abs on min/max */
#define GL_PTX_F_NONCOHERENT 0x1000u /* ld.global.nc, ldu: read-only path */
#define GL_PTX_F_WAIT 0x2000u    /* bar with a thread count operand (src[1]) */
#define GL_PTX_F_ABS 0x4000u     /* .abs on redux.sync.min/max.f32 */
#define GL_PTX_F_MULTICAST 0x8000u /* cp.async.bulk{.tensor} .multicast::cluster */

/* ---- Operands ----------------------------------------------------------- */

typedef enum gl_ptx_opnd_kind {
  GL_PTX_O_NONE = 0,
  GL_PTX_O_REG,   /* reg */
  GL_PTX_O_IMM,   /* imm: integer literals as two's complement 64-bit; 0fXXXXXXXX
                     as the 32 f32 bits; 0dXXXXXXXXXXXXXXXX as the 64 f64 bits;
                     a symbol used as a value (mov r, var) as its resolved address
                     in its space (for a local or .func-param symbol: kind FRAME) */
  GL_PTX_O_SREG,  /* sreg: a special register */
  GL_PTX_O_VEC,   /* vec[0..vec_n-1]: {%r1, %r2, ...}; GL_PTX_NOREG for '_' */
  GL_PTX_O_ADDR,  /* [reg + imm]; reg may be GL_PTX_NOREG ([imm], [symbol]) */
  GL_PTX_O_LABEL, /* imm = instruction index (absolute in gl_ptx_module.insns) */
  GL_PTX_O_FRAME  /* imm = byte offset in the thread's local memory, as a
                     value (mov %SPL, __local_depot0) */
} gl_ptx_opnd_kind;

typedef struct gl_ptx_operand {
  uint8_t kind;  /* gl_ptx_opnd_kind */
  uint8_t neg;   /* '!' before a predicate source operand */
  uint8_t vec_n; /* GL_PTX_O_VEC: 1..4 elements */
  uint8_t sreg;  /* GL_PTX_O_SREG: gl_ptx_sreg */
  uint32_t reg;  /* GL_PTX_O_REG, GL_PTX_O_ADDR base register or GL_PTX_NOREG */
  uint32_t vec[4];
  int64_t imm;
} gl_ptx_operand;

/* ---- Instructions ------------------------------------------------------- */

/* Operand order is PTX's: destinations in dst[], sources in src[] in the
 * order written. Per opcode:
 *   ADD..SLCT     dst[0]; src[0..2]. A second predicate destination (setp
 *                 d|q) is dst[1]; with GL_PTX_F_CC, dst[1] is the carry
 *                 register (REG GL_PTX_REG_CC); with GL_PTX_F_CARRY_IN the
 *                 carry is read from register GL_PTX_REG_CC by the ALU.
 *                 setp/set with boolop: src[2] is the predicate operand.
 *                 selp d, a, b, p: src[2] = p. slct d, a, b, c: src[2] = c.
 *   CVT           type = destination type, type2 = source type.
 *   SET           type = destination type, type2 = compared type.
 *   SLCT          type = value type, type2 = the type of c (.s32 or .f32).
 *   MUL/MAD .wide type = the SOURCE type (.s32 -> 64-bit result).
 *   DP4A/DP2A     type = type of a, type2 = type of b; DP2A mode: 0 lo, 1 hi.
 *   LD            dst[0] (REG or VEC), src[0] ADDR; vec = 1, 2 or 4.
 *   ST            src[0] ADDR, src[1] (REG, IMM or VEC).
 *   CVTA          dst[0], src[0] (REG or IMM); space; mode = direction.
 *   ATOM          dst[0], src[0] ADDR, src[1] b, src[2] c (cas only).
 *   RED           src[0] ADDR, src[1] b.
 *   BRA           src[0] LABEL.
 *   CALL          imm of src[0] = index into gl_ptx_module.calls.
 *   BAR           src[0] barrier id (REG or IMM), src[1] thread count if
 *                 GL_PTX_F_WAIT; bar.red: dst[0] and src[2] predicate.
 *   SHFL          dst[0], dst[1] optional pred; src[0] a, src[1] b (lane or
 *                 delta), src[2] c (clamp/segment mask), src[3] membermask.
 *   VOTE          dst[0]; src[0] pred (maybe neg); src[1] membermask.
 *   MATCH         dst[0], dst[1] optional pred; src[0] value; src[1] mask.
 *   ACTIVEMASK    dst[0].
 *   NANOSLEEP     src[0].
 *   BARCLUSTER    no operands; mode arrive or wait.
 *   MAPA          dst[0], src[0] address (generic, or .shared::cluster when
 *                 space says so), src[1] target CTA rank; type u32/u64.
 *   GETCTARANK    dst[0], src[0] address (as MAPA); type is the address's.
 *   CPASYNC       src[0] ADDR in .shared, src[1] ADDR in .global; mode =
 *                 cp-size (4, 8, 16); src[2] src-size (REG/IMM) or NONE
 *                 (= cp-size); src[3] ignore-src predicate (REG, maybe
 *                 neg) or NONE. space = SHARED.
 *   CPBULK        src[0] destination ADDR, src[1] source ADDR, src[2] size
 *                 in bytes, src[3] mbarrier ADDR (G2S, S2S) or NONE; space
 *                 = the destination's space for G2S (SHARED or
 *                 SHARED_CLUSTER, the mbarrier's too), else unused.
 *   MBARRIER      src[0] the object's ADDR (space: SHARED, SHARED_CLUSTER
 *                 or GENERIC), except PENDING_COUNT. INIT: src[1] count.
 *                 ARRIVE: dst[0] state (NOREG for '_'), src[1] count (IMM 1
 *                 when not written), src[2] tx count with MBAR_WITH_TX.
 *                 EXPECT_TX, COMPLETE_TX: src[1] tx count. TEST_WAIT,
 *                 TRY_WAIT: dst[0] predicate, src[1] state or phase parity
 *                 (the suspend-time hint is dropped). PENDING_COUNT:
 *                 dst[0], src[0] state. CP_ARRIVE{_NOINC}: src[0] only.
 *   REDUX         dst[0], src[0] value, src[1] membermask; mode =
 *                 gl_ptx_atom_op (ADD, MIN, MAX, AND, OR, XOR); type U32,
 *                 S32, B32 or F32 (min/max; flags GL_PTX_F_ABS, _NAN).
 *   ELECT         dst[0] leader's lane (NOREG for '_'), dst[1] predicate;
 *                 src[0] membermask.
 *   CPTENSOR      mode = GL_PTX_BULK_G2S or _S2G; vec = rank (1-5);
 *                 src[0] the shared ADDR (destination of G2S, source of
 *                 S2G; space: SHARED or SHARED_CLUSTER, the mbarrier's
 *                 too), src[1] the tensor map's generic ADDR, src[2] a VEC
 *                 of the first four .s32 coordinate registers, src[3] the
 *                 mbarrier ADDR (G2S) or NONE.
 *   CPREDUCE      mode = gl_ptx_atom_op (ADD, MIN, MAX, AND, OR, XOR, INC,
 *                 DEC). vec = 0: a bulk reduction, type its element type,
 *                 space the destination's (GLOBAL: bulk_group, or
 *                 SHARED_CLUSTER with src[3] the mbarrier ADDR), src[0]
 *                 destination ADDR, src[1] source ADDR (shared::cta),
 *                 src[2] size in bytes. vec = rank (1-5): a tensor
 *                 reduction into global memory, type from the tensor map,
 *                 operands as CPTENSOR's S2G.
 *   STASYNC,      src[0] ADDR in .shared::cluster (space SHARED_CLUSTER),
 *   REDASYNC      src[1] the value (REG or IMM; STASYNC: a VEC when vec is 2
 *                 or 4), src[2] the mbarrier ADDR (same space); type; vec.
 *                 REDASYNC: mode = gl_ptx_atom_op.
 *   CPBULK and CPTENSOR write no register (ndst 0) and keep two more
 *   sources in dst[]: dst[0] the ctaMask of .multicast::cluster (REG or
 *   IMM, flag GL_PTX_F_MULTICAST; NONE without), dst[1] CPTENSOR's fifth
 *   coordinate register (5-d only; NONE otherwise).
 */
typedef struct gl_ptx_insn {
  uint16_t op;     /* gl_ptx_op */
  uint8_t type;    /* gl_ptx_type: the instruction's type suffix (last one
                      for most opcodes; see above for cvt/set/slct/wide) */
  uint8_t type2;   /* gl_ptx_type: second type, GL_PTX_T_NONE if none */
  uint8_t space;   /* gl_ptx_space: ld, st, atom, red, cvta, prefetch */
  uint8_t vec;     /* ld/st: 1, 2 or 4 elements */
  uint8_t rnd;     /* gl_ptx_rnd */
  uint8_t mode;    /* per-opcode mode (the enums above), else 0 */
  uint8_t boolop;  /* setp/set: GL_PTX_BOOL_* */
  uint8_t ndst, nsrc;
  uint8_t guard_neg; /* @!p */
  uint16_t flags;    /* GL_PTX_F_* */
  uint32_t guard;    /* guard predicate register, or GL_PTX_NOREG */
  uint32_t line;     /* 1-based line in the PTX text, for messages */
  gl_ptx_operand dst[2];
  gl_ptx_operand src[4];
} gl_ptx_insn;

/* One call site: call (retval), func, (args). The caller's call-sequence
 * .param variables and each function's formal parameters live in the
 * calling thread's local memory at offsets fixed at load time (recursion
 * is refused when the module loads, so every function has one frame). At
 * the call the executor copies arg_size[i] bytes from caller offset
 * arg_off[i] to the callee's formal parameter offset; at ret it copies
 * the callee's return value back to ret_off. */
#define GL_PTX_MAX_CALL_ARGS 32
typedef struct gl_ptx_call {
  uint32_t func;      /* index into gl_ptx_module.funcs */
  uint32_t nargs;
  int32_t ret_off;    /* caller's retval param offset, -1 if none */
  uint32_t arg_off[GL_PTX_MAX_CALL_ARGS];
  uint32_t arg_size[GL_PTX_MAX_CALL_ARGS];
} gl_ptx_call;

/* A kernel parameter or a .func formal parameter. */
typedef struct gl_ptx_param {
  uint32_t offset; /* kernels: in the parameter buffer; funcs: local memory */
  uint32_t size;   /* bytes */
  uint32_t align;  /* bytes */
} gl_ptx_param;

/* A .entry (kernel) or .func. */
typedef struct gl_ptx_func {
  char name[256];
  int is_entry;
  uint32_t first_insn, insn_count; /* its instructions: [first, first+count) */
  uint32_t nparams;
  gl_ptx_param *params;     /* nparams; kernels: laid out in order with
                               their alignment, as cuLaunchKernel packs them */
  uint32_t param_bytes;     /* kernels: size of the parameter buffer */
  int32_t ret_off;          /* funcs: return value's local offset, -1 none */
  uint32_t ret_size;
  /* entries only: what a launch needs, including every .func it can call */
  uint32_t static_shared_bytes; /* the static .shared variables it can
                               reach (referenced by its body or a .func it
                               can call), each at its alignment: the
                               figure the launch limits check, as ptxas
                               counts per kernel. Addresses stay
                               module-wide (gl_ptx_module.shared_bytes). */
  uint32_t local_bytes;     /* per-thread local memory: depots + param frames */
  uint32_t reqntid[3];      /* .reqntid, 0 if absent */
  uint32_t maxntid[3];      /* .maxntid, 0 if absent */
  uint32_t reqnctapercluster[3]; /* .reqnctapercluster, 0 if absent */
  uint32_t maxclusterrank;  /* .maxclusterrank, 0 if absent */
  int explicit_cluster;     /* .explicitcluster: must launch as clusters */
  int builtin;              /* GL_PTX_BUILTIN_*: an .extern .func the
                               emulator provides (kprintf.c); 0 none */
} gl_ptx_func;

/* .extern .funcs the emulated device provides (src/emu/kprintf.c). */
#define GL_PTX_BUILTIN_VPRINTF 1    /* vprintf(fmt, args) -> int */
#define GL_PTX_BUILTIN_ASSERTFAIL 2 /* __assertfail(msg, file, line, func, charSize) */

/* Which builtin an .extern .func declaration f stands for: its name and
 * parameters (count and sizes) must be CUDA's. 0 when none (a call to it
 * is then refused as an external function). Defined in ptx_sym.c. */
int gl_ptx_builtin_kind(const gl_ptx_func *f);

typedef struct gl_ptx_module {
  int version_major, version_minor; /* .version */
  int target_sm;                    /* .target sm_XX -> XX (e.g. 75, 90) */
  uint32_t nregs;    /* registers, numbered module-wide; 0 = carry flag */
  gl_ptx_insn *insns;
  uint32_t ninsns;
  gl_ptx_func *funcs;
  uint32_t nfuncs;
  gl_ptx_call *calls;
  uint32_t ncalls;
  /* .global and .const variables, initialised, as one image that the
   * device maps at the data_base given to gl_ptx_parse. */
  uint8_t *data;
  uint64_t data_bytes;
  /* Shared and local memory are laid out module-wide: every .shared
   * variable of every function gets its own offset, as does every
   * function's local depot and parameter frame. An .extern .shared array
   * (dynamic shared memory) starts at GL_PTX_DYN_SHARED_OFFSET(m), so a
   * block of any kernel gets GL_PTX_DYN_SHARED_OFFSET(m) + dynamic bytes
   * (more than the kernel's static_shared_bytes when other kernels have
   * their own variables). */
  uint32_t shared_bytes;     /* all static .shared variables */
} gl_ptx_module;

#define GL_PTX_DYN_SHARED_OFFSET(m) (((m)->shared_bytes + 15u) & ~15u)

#endif /* GL_EMU_PTX_IR_H */
