#!/usr/bin/env bash
# tools/timed.sh NAME COMMAND...: run COMMAND, then print "== NAME: N s, cpu M s (K cores)"
# (make test's time breakdown; cpu = user + system time of COMMAND and the children it
# waited for, so K says how busy it kept the machine) and exit with COMMAND's status.
set -u
name=$1
shift
start=$(date +%s)
"$@"
rc=$?
wall=$(($(date +%s) - start))
record=$(mktemp)
times >"$record" # a builtin, run in this shell (in a pipe it would see a subshell's children)
cpu=$(tail -1 "$record" | awk '{ t = 0; for (i = 1; i <= NF; i++) { split($i, p, "m");
    t += p[1] * 60 + p[2] } printf "%.0f", t }')
rm -f "$record"
echo "== $name: $wall s, cpu $cpu s ($(awk -v c="$cpu" -v w="$wall" \
    'BEGIN { printf "%.1f", w ? c / w : 0 }') cores) (exit $rc)"
exit $rc
