#!/usr/bin/env bash
# make test's learner job: what a learner's laptop does with the README's commands. A new
# unprivileged user clones the repository (what is committed) and runs `make course` at the
# smoke profile with the system's own Python, with no Python 3.11 for lab 08b, and with Slurm,
# iproute2 (ip, tc) and apt hidden (bind-mounted over by /dev/null in a mount namespace of its
# own). It passes when make course passes: every lesson runs to the end, saying what it cannot
# show (tools/learner_run.py reads that from the run). Needs root (to add the user and hide the programs); usage: tools/as_learner.sh [LESSONS]
set -euo pipefail
lessons=${1:-05_,07_,08b_}
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "as_learner: run as root (it adds a user and hides programs)"; exit 1; }
user=tflearn-learner
id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)
rm -rf "$home/tflearn"
git clone -q "$repo" "$home/tflearn"
chown -R "$user:" "$home/tflearn"
hide=$(for program in sbatch srun sinfo squeue scontrol scancel slurmctld slurmd slurmstepd \
               munged ip tc apt-get apt; do
  for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    if [ -e "$dir/$program" ]; then readlink -f "$dir/$program"; fi  # the file behind links
  done
done | sort -u | tr '\n' ' ')
python=$(command -v python3.11 || command -v python3)
case "$python" in /root/*) python=/usr/bin/python3 ;; esac  # root's pyenv: not the learner's
echo "== as $user, with $("$python" --version) ($python); hidden: $hide"
unshare --mount --propagation private -- sh -c '
  for f in $1; do mount --bind /dev/null "$f"; done
  exec setpriv --reuid="$2" --regid="$2" --init-groups env -i HOME="$3" USER="$2" \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TFLEARN_SCALE=smoke PYTHONFAULTHANDLER=1 \
    make -C "$3/tflearn" --no-print-directory course PYTHON="$4" PYTHON_LEGACY=/nonexistent/python3.11 \
    COURSE_ONLY="$5"
' sh "$hide" "$user" "$home" "$python" "$lessons"
rc=$?
if [ "$lessons" = 05_,07_,08b_ ]; then  # what they said they could not show
  python3 "$repo/tools/learner_run.py" "$home/tflearn/build" || rc=1
fi
left=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -user "$user" -name 'tflearn-*' | wc -l)
echo "== $user left $left tflearn-* entries in the temp folder"
exit $(( rc || left ))
