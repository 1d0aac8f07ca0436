#!/usr/bin/env bash
# tools/timed.sh NAME COMMAND...: run COMMAND, then print "== NAME: N s" (make test's time
# breakdown) and exit with COMMAND's status.
set -u
name=$1
shift
start=$(date +%s)
"$@"
rc=$?
echo "== $name: $(( $(date +%s) - start )) s (exit $rc)"
exit $rc
