#!/usr/bin/env bash
# What PTX a node loads (issue 18): the inventory's SM targets and PTX ISA
# versions, and the client library's check of a PTX's .version and
# .target before it sends it, against a real gpuleased on the emulated
# device; fatbins on the emulated device. Usage: test_ptx_targets.sh BUILD_DIR
set -uo pipefail
build=$1
. "$(dirname "$0")/emu_daemon.sh"
out=$dir/out err=$dir/err

cli inventory > $out 2> $err
check "inventory: targets and ISA" 0 $? "targets sm_90, sm_90a; PTX ISA up to 9.9$" $out
cli --json inventory > $out 2> $err
tr -d ' \n' < $out > $dir/flat
check "inventory json: sm_targets" 0 $? '"sm_targets":\["sm_90","sm_90a"\]' $dir/flat
check "inventory json: ptx_isa_driver" 0 0 '"ptx_isa_driver": "9.9"' $out
check "inventory json: no nvJitLink" 0 0 '"ptx_isa_nvjitlink": null' $out

# A kernel that writes 1..n: the same body under several headers.
body='.visible .entry k(.param .u64 p) {
  .reg .b32 %r<3>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p]; cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x; add.u32 %r2, %r1, 1;
  mul.wide.u32 %rd3, %r1, 4; add.s64 %rd2, %rd2, %rd3; st.global.u32 [%rd2], %r2; ret; }'
mk() { printf '.version %s\n.target %s\n.address_size 64\n%s\n' "$1" "$2" "$body" > "$dir/$3.ptx"; }
mk 9.4 sm_90a ok94a
mk 8.0 sm_80 ok80
mk 10.0 sm_90 v100
mk 9.0 sm_100 t100
mk 8.0 sm_80a t80a
run() { cli submit --binary "$dir/$1.ptx" --kernel k --block 4 --output-size 16 --format u32; }

run ok94a > $out 2> $err;  check "ISA 9.4 sm_90a runs" 0 $? "\[    0\] *1 *2 *3 *4$" $out
run ok80 > $out 2> $err;   check "ISA 8.0 sm_80 runs" 0 $? "\[    0\] *1 *2 *3 *4$" $out
run v100 > $out 2> $err
check "ISA 10.0 refused before sending" 1 $? "LOAD_FAILED: GPU 0: PTX ISA 10.0 (.target sm_90) is newer than the node loads: its driver takes ISA up to 9.9, and it has no nvJitLink" $err
check "... with what to send instead" 0 0 "send a cubin for sm_90a .*PTX of ISA 9.9 or older, or a fatbin" $err
check "... said to be the library's check" 0 0 "checked before sending" $err
GPULEASE_PTX_CHECK=0 run v100 > $out 2> $err
check "GPULEASE_PTX_CHECK=0: the node refuses it" 1 $? "LOAD_FAILED.*PTX ISA version 10.0 is newer than the emulated device accepts" $err
run t100 > $out 2> $err
check ".target sm_100 refused" 1 $? "PTX for .target sm_100 needs a newer GPU: this GPU is compute capability 9.0, which runs sm_90 and sm_90a and older targets" $err
run t80a > $out 2> $err
check ".target sm_80a refused" 1 $? "PTX for .target sm_80a needs another GPU's arch-specific features" $err
# Fatbins (tests/data/fatbin/): the emulated device runs the PTX inside.
fb=$(cd "$(dirname "$0")/../data/fatbin" && pwd)
fbrun() { cli submit --binary "$fb/$1" --kernel k --block 4 --output-size 16 --format u32 "${@:2}"; }
fbrun multi.fatbin > $out 2> $err
check "fatbin (zstd; cubins sm_75, sm_90, PTX sm_90) runs its PTX" 0 $? "\[    0\] *1 *2 *3 *4$" $out
fbrun multi_lz4.fatbin --image-format fatbin > $out 2> $err
check "fatbin (LZ4) runs" 0 $? "\[    0\] *1 *2 *3 *4$" $out
fbrun ptx75.fatbin > $out 2> $err
check "fatbin of compute_75 PTX runs" 0 $? "\[    0\] *1 *2 *3 *4$" $out
fbrun cubins.fatbin > $out 2> $err
check "fatbin of cubins only: refused, with what it holds" 1 $? "UNSUPPORTED: the emulated device runs PTX only, and the fatbin holds no PTX for sm_90 or older (it holds: cubin sm_75, cubin sm_80)" $err
if grep -q "checked before sending" "$dir/daemon.log"; then
  fail=$((fail+1)); echo "FAIL the library's refusals reached the daemon"
else pass=$((pass+1)); echo "ok   the library's refusals never reached the daemon"; fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
