#!/usr/bin/env bash
# The man pages against the code they describe. Usage:
#   test_man_daemon.sh BUILD_DIR SOURCE_DIR
# Fails, saying what disagrees, unless
#  (a) every long option `gpuleased --help` prints is in gpuleased.8.scd, and
#      every --option written there is one --help prints; and its METRICS
#      section names the metric families src/daemon/metrics.c renders;
#  (b) every function libgpulease exports (the global patterns of
#      src/lib/libgpulease.map, over the built libgpulease.so) has an entry
#      in libgpulease.3.scd's FUNCTIONS, and every gpulease_ name the page
#      writes is an exported function (or, written without "()", a type or
#      constant of the public header);
#  (c) each docs/man/*.scd has its page (and its .gz, made with gzip -n)
#      in BUILD_DIR/docs/man, and man(1) and groff(1) render each without a
#      warning (skipped, saying so, where neither is installed).
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
  exit 2
fi
build=$1
src=$2
man_src=$src/docs/man
man_out=$build/docs/man
tmp=$(mktemp -d /tmp/gl-man-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; }

# ---- (a) gpuleased(8) and gpuleased --help --------------------------------
daemon=$build/src/daemon/gpuleased
page=$man_src/gpuleased.8.scd
if [ ! -x "$daemon" ]; then
  bad "gpuleased options: $daemon is not built"
elif [ ! -f "$page" ]; then
  bad "gpuleased options: $page is missing"
else
  if ! "$daemon" --help > "$tmp/help" 2>&1; then
    bad "gpuleased --help exits non-zero"
    cat "$tmp/help"
  fi
  # An option is a --name that starts a line of the help; the page's are
  # every --name it writes.
  grep -oE '^[[:space:]]+--[a-z0-9][a-z0-9-]*' "$tmp/help" | sed 's/^[[:space:]]*//' \
    | sort -u > "$tmp/help_opts"
  grep -oE -- '--[a-z0-9][a-z0-9-]*' "$page" | sort -u > "$tmp/page_opts"
  if [ "$(wc -l < "$tmp/help_opts")" -lt 10 ]; then
    bad "gpuleased --help: found only $(wc -l < "$tmp/help_opts") options in it"
    cat "$tmp/help"
  fi
  missing=$(comm -23 "$tmp/help_opts" "$tmp/page_opts")
  extra=$(comm -13 "$tmp/help_opts" "$tmp/page_opts")
  if [ -z "$missing" ]; then
    ok "every option of gpuleased --help ($(wc -l < "$tmp/help_opts")) is in gpuleased.8.scd"
  else
    bad "options of gpuleased --help missing from gpuleased.8.scd:"
    echo "$missing" | sed 's/^/       /'
  fi
  if [ -z "$extra" ]; then
    ok "every --option written in gpuleased.8.scd is in gpuleased --help"
  else
    bad "gpuleased.8.scd writes options that gpuleased --help does not print:"
    echo "$extra" | sed 's/^/       /'
  fi
fi

# The metric families src/daemon/metrics.c renders (its help() and
# PER_GPU() calls) and
# those gpuleased.8.scd's METRICS section names, both ways.
metrics_c=$src/src/daemon/metrics.c
if [ -f "$page" ] && [ -f "$metrics_c" ]; then
  grep -oE '(help\(&o, |PER_GPU\()"gpulease_[a-z0-9_]+"' "$metrics_c" | grep -oE 'gpulease_[a-z0-9_]+' \
    | sort -u > "$tmp/families"
  sed -n '/^# METRICS/,/^# [A-Z]/p' "$page" | grep -oE 'gpulease_[a-z0-9_]*[a-z0-9]' \
    | sort -u > "$tmp/page_families"
  missing=$(comm -23 "$tmp/families" "$tmp/page_families")
  extra=$(comm -13 "$tmp/families" "$tmp/page_families")
  if [ ! -s "$tmp/families" ]; then
    bad "metrics.c: no metric family found"
  elif [ -z "$missing$extra" ]; then
    ok "gpuleased.8.scd's METRICS names the $(wc -l < "$tmp/families") families of metrics.c"
  else
    bad "gpuleased.8.scd's METRICS and metrics.c disagree:"
    [ -n "$missing" ] && echo "$missing" | sed 's/^/       not in the page: /'
    [ -n "$extra" ] && echo "$extra" | sed 's/^/       not in metrics.c: /'
  fi
fi

# ---- (b) libgpulease(3) and the exported functions ------------------------
map=$src/src/lib/libgpulease.map
header=$src/include/gpulease/gpulease.h
lib=$build/src/lib/libgpulease.so
page=$man_src/libgpulease.3.scd
# The map's global patterns: the words between "global:" and "local:".
sed 's|/\*.*\*/||' "$map" | tr -s ' \t\n;' '\n' \
  | awk '/^global:$/ {on=1; next} /^local:$/ {on=0} on && NF && $0 !~ /[{}]/' > "$tmp/patterns"
matches_map() { # NAME: 0 when a global pattern of the map matches it
  local p
  while read -r p; do
    # shellcheck disable=SC2254 # the pattern is a glob on purpose
    case $1 in $p) return 0 ;; esac
  done < "$tmp/patterns"
  return 1
}
if [ ! -s "$tmp/patterns" ]; then
  bad "libgpulease.map: no global patterns found"
elif [ ! -f "$page" ]; then
  bad "libgpulease functions: $page is missing"
else
  : > "$tmp/exported"
  if [ ! -e "$lib" ]; then
    bad "libgpulease functions: $lib is not built"
  elif command -v nm > /dev/null; then
    # Defined functions of the dynamic symbol table, without their version.
    nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "W" || $2 == "i" {print $3}' \
      | sed 's/@.*//' | sort -u > "$tmp/symbols"
    while read -r s; do
      if matches_map "$s"; then echo "$s"; fi
    done < "$tmp/symbols" > "$tmp/exported"
  else
    echo "note: no nm(1); the header's GPULEASE_API functions stand for the exports"
    tr '\n' ' ' < "$header" | grep -oE 'GPULEASE_API[^;(]*\(' \
      | grep -oE 'gpulease_[a-z0-9_]+[[:space:]]*\($' | tr -d ' (' | sort -u > "$tmp/declared"
    while read -r s; do
      if matches_map "$s"; then echo "$s"; fi
    done < "$tmp/declared" > "$tmp/exported"
  fi
  sort -u -o "$tmp/exported" "$tmp/exported"
  n=$(wc -l < "$tmp/exported")
  if [ "$n" -lt 10 ]; then
    bad "libgpulease exports only $n functions matching the map"
  fi
  # Entries of the page's FUNCTIONS section: lines "*gpulease_x*()".
  sed -n '/^# FUNCTIONS/,/^# [A-Z]/p' "$page" \
    | grep -oE '^\*gpulease_[a-z0-9_]+\*\(\)' | tr -d '*()' | sort -u > "$tmp/entries"
  missing=$(comm -23 "$tmp/exported" "$tmp/entries")
  if [ -z "$missing" ]; then
    ok "every exported function ($n) has an entry in libgpulease.3.scd's FUNCTIONS"
  else
    bad "exported functions without an entry in libgpulease.3.scd's FUNCTIONS:"
    echo "$missing" | sed 's/^/       /'
  fi
  # Names the page writes as functions ("name()" or "*name*()") must be
  # exported; any other gpulease_ name must be exported or the header's.
  grep -oE 'gpulease_[a-z0-9_]*[a-z0-9]\**\(' "$page" | tr -d '*(' | sort -u > "$tmp/called"
  grep -oE 'gpulease_[a-z0-9_]*[a-z0-9]' "$page" | sort -u > "$tmp/named"
  grep -oE 'gpulease_[a-z0-9_]*[a-z0-9]' "$header" | sort -u > "$tmp/header_names"
  extra=$(comm -23 "$tmp/called" "$tmp/exported")
  if [ -z "$extra" ]; then
    ok "every function libgpulease.3.scd names ($(wc -l < "$tmp/called")) is exported"
  else
    bad "libgpulease.3.scd names functions that libgpulease does not export:"
    echo "$extra" | sed 's/^/       /'
  fi
  unknown=$(sort -u "$tmp/exported" "$tmp/header_names" | comm -23 "$tmp/named" -)
  if [ -z "$unknown" ]; then
    ok "every other gpulease_ name in libgpulease.3.scd is the header's"
  else
    bad "libgpulease.3.scd names what neither libgpulease exports nor gpulease.h declares:"
    echo "$unknown" | sed 's/^/       /'
  fi
fi

# ---- (c) the generated pages, and how they render -------------------------
have_man=0 have_groff=0
command -v man > /dev/null && have_man=1
command -v groff > /dev/null && have_groff=1
[ $have_man = 0 ] && echo "skip: rendering with man(1): man-db is not installed"
[ $have_groff = 0 ] && echo "skip: rendering with groff(1): groff is not installed"
pages=0
for scd in "$man_src"/*.scd; do
  [ -e "$scd" ] || continue
  pages=$((pages+1))
  name=$(basename "$scd" .scd)
  out=$man_out/$name
  if [ ! -s "$out" ]; then
    bad "$name: no page $out (is the build done?)"
    continue
  fi
  ok "$name: generated"
  if [ ! -s "$out.gz" ]; then
    bad "$name: no $out.gz"
  elif ! gzip -dc "$out.gz" | cmp -s - "$out"; then
    bad "$name: $out.gz is not the page compressed"
  else
    # gzip -n: no file name (FLG bit 3) and no time stamp (MTIME, bytes 4..7).
    hdr=$(od -An -tu1 -N8 "$out.gz" | tr -s ' \n' ' ')
    read -r _ _ _ flg m0 m1 m2 m3 <<< "$hdr"
    if [ $((flg & 8)) -ne 0 ] || [ "$m0$m1$m2$m3" != "0000" ]; then
      bad "$name.gz carries a file name or time stamp (gzip header:$hdr)"
    else
      ok "$name.gz: the page, gzip -n"
    fi
  fi
  # What the page is called inside must be its file name.
  title=$(grep -m1 '^\.TH' "$out" | awk '{gsub(/"/, ""); print $2 "." $3}')
  if [ "$title" != "$name" ]; then
    bad "$name: its .TH says $title"
  fi
  if [ $have_man = 1 ]; then
    MANPAGER=cat PAGER=cat MANWIDTH=80 man --warnings -l "$out" > "$tmp/text" 2> "$tmp/warn"
    rc=$?
    if [ $rc -ne 0 ] || [ -s "$tmp/warn" ]; then
      bad "$name: man --warnings -l (rc $rc):"
      sed 's/^/       /' "$tmp/warn"
    elif ! grep -q '^NAME' "$tmp/text"; then
      bad "$name: man -l rendered no NAME section"
    else
      ok "$name: man --warnings -l renders it without warnings ($(wc -l < "$tmp/text") lines)"
    fi
  fi
  if [ $have_groff = 1 ]; then
    groff -man -ww -z "$out" 2> "$tmp/warn"
    rc=$?
    if [ $rc -ne 0 ] || [ -s "$tmp/warn" ]; then
      bad "$name: groff -man -ww -z (rc $rc):"
      sed 's/^/       /' "$tmp/warn"
    else
      ok "$name: groff -man -ww -z: no warnings"
    fi
  fi
done
if [ $pages -eq 0 ]; then
  bad "no man page sources in $man_src"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
