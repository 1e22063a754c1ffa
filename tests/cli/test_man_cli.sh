#!/usr/bin/env bash
# The man page of the CLI (docs/man/gpulease.1.scd) against the CLI's own
# help texts (src/cli/help.c), so that neither drifts from the other:
#   (a) every option in `gpulease --help` is in the man page;
#   (b) every --option in the man page is in `gpulease --help`;
#   (c) every command of `gpulease --help` has its "## COMMAND" part in the
#       man page, and the man page has no part for a command that is not;
#   (d) every option of `gpulease COMMAND --help` is in that command's part;
#   (e) the CLI's parser accepts every option of (a) and (b);
#   (f) `gpulease help [COMMAND]` prints what --help prints, and an unknown
#       COMMAND is a usage error (exit 2);
#   (g) scdoc turns the page into roff without an error (when installed).
# Prints each disagreement. Usage: test_man_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
cli=$build/src/cli/gpulease
man=$src/docs/man/gpulease.1.scd
dir=$(mktemp -d /tmp/gl-man-cli-XXXXXX)
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; }
opts_of() { grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }
# The part of the man page under "## $1", up to the next header.
man_part() { awk -v h="## $1" '$0 == h { on = 1; next } on && /^#/ { exit } on' "$man"; }

[ -r "$man" ] || { echo "FAIL cannot read $man"; exit 1; }
"$cli" --help > "$dir/help" 2> "$dir/err"
rc=$?
[ $rc = 0 ] && [ -s "$dir/help" ] && ok "gpulease --help" || { bad "gpulease --help (rc $rc)"; exit 1; }
opts_of < "$dir/help" > "$dir/help.opts"
opts_of < "$man" > "$dir/man.opts"
[ "$(wc -l < "$dir/help.opts")" -ge 40 ] && ok "--help lists $(wc -l < "$dir/help.opts") options" ||
  bad "--help lists only $(wc -l < "$dir/help.opts") options"

# (a) and (b)
missing=$(comm -23 "$dir/help.opts" "$dir/man.opts")
extra=$(comm -13 "$dir/help.opts" "$dir/man.opts")
if [ -z "$missing" ]; then ok "(a) every option of --help is in gpulease.1.scd"
else bad "(a) in gpulease --help but not in gpulease.1.scd: $(echo $missing)"; fi
if [ -z "$extra" ]; then ok "(b) every option of gpulease.1.scd is in --help"
else bad "(b) in gpulease.1.scd but not in gpulease --help: $(echo $extra)"; fi

# (e) the parser knows them: "gpulease --opt" never says "unknown option"
unknown=
for o in $(sort -u "$dir/help.opts" "$dir/man.opts"); do
  said=$("$cli" "$o" 2>&1 < /dev/null)
  case $said in *"unknown option"*) unknown="$unknown $o" ;; esac
done
if [ -z "$unknown" ]; then ok "(e) the parser accepts every documented option"
else bad "(e) documented, but the parser says 'unknown option':$unknown"; fi
"$cli" --no-such-option > /dev/null 2> "$dir/err"
rc=$?
[ $rc = 2 ] && grep -q "unknown option '--no-such-option'" "$dir/err" &&
  ok "(e) an unknown option is refused" || bad "(e) --no-such-option: rc $rc, $(cat "$dir/err")"

# (c) the commands
# "Commands: a, b," and the indented lines that go on with it
commands=$(awk '/^Commands: / { sub(/^Commands: /, ""); on = 1; print; next }
                on && /^ / { print; next } { on = 0 }' "$dir/help" | tr -d ' \n' | tr ',' ' ')
[ -n "$commands" ] && ok "--help names the commands: $commands" || bad "no 'Commands:' line in --help"
for c in $commands; do
  if grep -qx "## $c" "$man"; then ok "(c) '$c' has its part in gpulease.1.scd"
  else bad "(c) command '$c' has no '## $c' part in gpulease.1.scd"; fi
done
for h in $(awk '/^# /{ in_cmds = ($0 == "# COMMANDS") } in_cmds && /^## /{ print $2 }' "$man"); do
  case " $commands " in
    *" $h "*) ;;
    *) bad "(c) gpulease.1.scd has a part '## $h', but --help names no such command" ;;
  esac
done

# (d) each command's options in its part; (f) help COMMAND = COMMAND --help
for c in $commands; do
  "$cli" "$c" --help > "$dir/$c.help" 2> "$dir/err"
  rc=$?
  if [ $rc != 0 ] || [ ! -s "$dir/$c.help" ]; then bad "(d) gpulease $c --help: rc $rc"; continue; fi
  man_part "$c" | opts_of > "$dir/$c.man"
  missing=$(opts_of < "$dir/$c.help" | comm -23 - "$dir/$c.man")
  if [ -z "$missing" ]; then ok "(d) $c: every option of 'gpulease $c --help' is in its part"
  else bad "(d) in 'gpulease $c --help' but not in the '## $c' part of gpulease.1.scd: $(echo $missing)"; fi
  "$cli" help "$c" > "$dir/$c.help2" 2>&1
  rc=$?
  if [ $rc = 0 ] && cmp -s "$dir/$c.help" "$dir/$c.help2"; then ok "(f) 'gpulease help $c' = 'gpulease $c --help'"
  else bad "(f) 'gpulease help $c' (rc $rc) differs from 'gpulease $c --help'"; fi
  if cmp -s "$dir/$c.help" "$dir/help"; then bad "(f) 'gpulease $c --help' prints everything"; fi
done
"$cli" help > "$dir/help2" 2>&1
rc=$?
[ $rc = 0 ] && cmp -s "$dir/help" "$dir/help2" && ok "(f) 'gpulease help' = 'gpulease --help'" ||
  bad "(f) 'gpulease help' (rc $rc) differs from 'gpulease --help'"
"$cli" help no-such-command > "$dir/out" 2> "$dir/err"
rc=$?
[ $rc = 2 ] && grep -q "unknown command 'no-such-command'" "$dir/err" &&
  ok "(f) help of an unknown command: usage error" || bad "(f) help no-such-command: rc $rc"
"$cli" > "$dir/out" 2> "$dir/err"
rc=$?
[ $rc = 2 ] && cmp -s "$dir/help" "$dir/err" && ok "(f) no command: the help on stderr, exit 2" ||
  bad "(f) no command: rc $rc"

# (g) the page builds
if command -v scdoc > /dev/null; then
  if scdoc < "$man" > "$dir/gpulease.1" 2> "$dir/err" && [ -s "$dir/gpulease.1" ]; then
    ok "(g) scdoc builds gpulease.1"
  else bad "(g) scdoc: $(cat "$dir/err")"; fi
else
  echo "skip (g): no scdoc"
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
