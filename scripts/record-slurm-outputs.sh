#!/usr/bin/env bash
# Record what the local Slurm (scripts/slurm-local.sh) says of jobs in known states, as fixtures for
# tests/test_slurm_parsers.py: the parsers are then tested on real outputs without a running Slurm.
#
# Usage: scripts/record-slurm-outputs.sh [OUT_DIR]      (default tests/fixtures/slurm; run as root)
#   RECORD_DEADLINE=60  seconds any one wait may take
#   RECORD_TIMEOUT=1    also record a TIMEOUT (--time=1 running sleep 90). Off by default: slurmctld checks
#                       time limits every 30 s, so the job ends 60-90 s after it starts (71 s when tried),
#                       more than the 70 s this script may spend on it.
#
# As the test user it submits arrays named cigri.record.<scenario> (listed in the README this script writes),
# waits for each to reach its state (deadline loops, no blind sleeps), records squeue/sinfo/REST at the
# moment "running", cancels everything it submitted (but the timeout job, which ends on its own), and records
# again at the moment "ended" (plus sacct).
# Other users' jobs may share the node; only ours are cancelled. The old fixtures are replaced only when
# the whole recording succeeded.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/tests/fixtures/slurm}
ENV_FILE=/run/slurm/ci.env
DEADLINE=${RECORD_DEADLINE:-60}
WITH_TIMEOUT=${RECORD_TIMEOUT:-0}
# the very command SlurmSsh._our_jobs runs (cigri/adapters/slurm.py): keep the two in step
SQUEUE_FIELDS="JobArrayID:|,ArrayJobID:|,State:|,Reason:|,exit_code:|,StartTime:|,EndTime:|,NumCPUs:|,Name:"
PREFIX=cigri.record.

log() { echo "record: $*" >&2; }
die() { echo "record: ERROR: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root (jobs are submitted as the test user through runuser)"
[[ -r $ENV_FILE ]] || die "$ENV_FILE missing: run scripts/slurm-local.sh start"
# read the settings without sourcing: an exported SLURM_JWT would make every Slurm command use root's token
env_value() { sed -n "s/^$1=//p" "$ENV_FILE" | head -n 1 | sed "s/^[\"']//; s/[\"']\$//"; }
TEST_USER=$(env_value SLURM_TEST_USER)
REST_URL=$(env_value SLURMRESTD_URL)
REST_API=$(env_value SLURMRESTD_API)
USER_TOKEN=$(env_value SLURM_JWT_USER)
[[ -n $TEST_USER && -n $REST_URL && -n $REST_API && -n $USER_TOKEN ]] || die "$ENV_FILE lacks a setting"

STAGE=$(mktemp -d)
SUBMITTED=()  # array job ids of this run, all cancelled on exit
SCENARIOS=()  # the scenario of each, and its number of tasks
cleanup() {
  if ((${#SUBMITTED[@]})); then as_user scancel "${SUBMITTED[@]}" 2>/dev/null || true; fi
  rm -rf "$STAGE"
}
trap cleanup EXIT
cd /tmp  # the test user must be able to enter the working directory

as_user() { runuser -u "$TEST_USER" -- "$@"; }

submit() {  # $1 variable set to the array job id, $2 scenario, $3 tasks, rest: sbatch options
  local var=$1 scenario=$2 tasks=$3 id name=$PREFIX$2; shift 3
  id=$(as_user sbatch --parsable --job-name="$name" --array="1-$tasks" --comment="cigri batch of $tasks tasks" \
    --output=/dev/null --error=/dev/null --chdir=/tmp "$@") || die "sbatch $name refused"
  id=${id%%;*}
  [[ $id =~ ^[0-9]+$ ]] || die "sbatch $name answered $id"
  SUBMITTED+=("$id")
  SCENARIOS+=("$scenario $tasks")
  printf -v "$var" %s "$id"
  log "$name: array $id"
}

tasks() {  # $1 array id: "task state reason" of each of its tasks
  as_user squeue -h -r -t all -j "$1" -o "%i %T %r" 2>/dev/null || true
}

wait_until() {  # $1 what, rest: a command polled until it succeeds
  local what=$1 end=$((SECONDS + DEADLINE)); shift
  until "$@"; do
    ((SECONDS < end)) || die "$what: not seen within ${DEADLINE}s; last: $(tasks_all | tr '\n' ';')"
    sleep 0.2
  done
}
tasks_all() { as_user squeue --me -h -r -t all -n "$(names)" -o "%i %T %r" 2>/dev/null || true; }
names() { local IFS=,; echo "${SCENARIO_NAMES[*]}"; }

# task $2 of array $1 is in state $3 (an extended regexp)
in_state() { tasks "$1" | grep -Eq "^${1}_$2 ($3) "; }
# every task of array $1 is in state $2 (an extended regexp)
all_in_state() { local out; out=$(tasks "$1"); [[ -n $out ]] && ! grep -Evq "^[^ ]+ ($2) " <<<"$out"; }
# task $2 of array $1 is no longer listed, though the array is
gone() { local out; out=$(tasks "$1"); [[ -n $out ]] && ! grep -q "^${1}_$2 " <<<"$out"; }
idle_cpus() { sinfo -h -o %C | awk -F/ '{ idle += $2 } END { print idle + 0 }'; }
filler_full() { in_state "$FILLER" '[0-9]+' RUNNING && (($(idle_cpus) == 0)); }

rest() {  # $1 path under /slurm/<api>/: the answer's JSON as the test user gets it (token kept off argv)
  curl -sS --fail-with-body --max-time 20 -H @- "$REST_URL/slurm/$REST_API/$1" <<EOF
X-SLURM-USER-NAME: $TEST_USER
X-SLURM-USER-TOKEN: $USER_TOKEN
EOF
}

# only the lines of this run's arrays, verbatim: the test user's other jobs (other sessions' campaigns and
# benchmarks: thousands of lines) would make the fixtures megabytes
ours_lines() { grep -E "^[0-9_]+\|($(IFS='|'; echo "${SUBMITTED[*]}"))\|"; }

# only the jobs of this run, every field as slurmrestd sent it (the full list is ~4 kB per job of everyone's)
ours_only() {
  python3 -c '
import json, sys
data = json.load(sys.stdin)
data["jobs"] = [job for job in data.get("jobs") or [] if str(job.get("array_job_id")) in sys.argv[1:]]
json.dump(data, sys.stdout, indent=1)
print()' "${SUBMITTED[@]}"
}

record() {  # $1 moment: the outputs the adapters parse, as they are now (sinfo and nodes back to back)
  as_user squeue --me -h -r -t all -O "$SQUEUE_FIELDS" | ours_lines >"$STAGE/squeue.$1.txt"
  rest jobs | ours_only >"$STAGE/rest-jobs.$1.json"
  as_user sinfo -h -o %C >"$STAGE/sinfo.$1.txt"
  rest nodes >"$STAGE/rest-nodes.$1.json"
  log "recorded moment $1"
}

# ---- scenarios --------------------------------------------------------------------------------------------
# the array id of each scenario, set by submit
OK='' FAIL='' SIGNAL='' WAIT='' HELD='' RUN='' SUSPEND='' REQUEUE='' FILLER='' PREEMPTOR='' TIMEOUT=''
SCENARIO_NAMES=()
for s in ok fail signal wait held run suspend requeue filler preemptor timeout; do SCENARIO_NAMES+=("$PREFIX$s"); done

if [[ $WITH_TIMEOUT == 1 ]]; then submit TIMEOUT timeout 1 --time=1 --wrap 'sleep 90'; fi
submit OK ok 2 --wrap 'exit 0'
submit FAIL fail 1 --wrap 'exit 3'
submit SIGNAL signal 1 --wrap 'kill -9 $$'
submit WAIT wait 3 --begin=now+1hour --wrap true
submit HELD held 1 --hold --wrap true
submit RUN run 2 --wrap 'sleep 300'
submit SUSPEND suspend 1 --wrap 'sleep 300'
submit REQUEUE requeue 1 --wrap 'sleep 300'

wait_until "ok COMPLETED" all_in_state "$OK" COMPLETED
wait_until "fail FAILED" all_in_state "$FAIL" FAILED
wait_until "signal FAILED" all_in_state "$SIGNAL" FAILED
wait_until "wait PENDING" all_in_state "$WAIT" PENDING
wait_until "run RUNNING" all_in_state "$RUN" RUNNING
wait_until "suspend RUNNING" all_in_state "$SUSPEND" RUNNING
wait_until "requeue RUNNING" all_in_state "$REQUEUE" RUNNING

as_user scancel "${WAIT}_2"  # a pending task, cancelled: Slurm drops it from the array at once
as_user scancel "${RUN}_1"   # a running task, cancelled
scontrol suspend "$SUSPEND"  # root only: the test user may not suspend
as_user scontrol requeuehold "${REQUEUE}_1"
wait_until "wait_2 dropped" gone "$WAIT" 2
wait_until "run_1 CANCELLED" in_state "$RUN" 1 CANCELLED
wait_until "suspend SUSPENDED" all_in_state "$SUSPEND" SUSPENDED
wait_until "requeue held" all_in_state "$REQUEUE" PENDING

# preemption: fill the node's idle CPUs with besteffort tasks, then one debug task needs a CPU
submit FILLER filler 8 --partition=besteffort --requeue --wrap 'sleep 300'
wait_until "filler filling the node" filler_full
submit PREEMPTOR preemptor 1 --partition=debug --wrap 'sleep 300'
restarted() { as_user squeue -h -r -t all -j "$FILLER" -O "JobArrayID:|,RestartCnt:|" | awk -F'|' '$2 > 0 { print $1 }'; }
preempted() {  # keeps the first listing that shows a besteffort task in a preemption state (seldom caught)
  local listing; listing=$(as_user squeue --me -h -r -t all -O "$SQUEUE_FIELDS")
  if [[ ! -e $STAGE/squeue.preempted.txt ]] && grep -Eq "^${FILLER}_[0-9]+\|${FILLER}\|(PREEMPTED|REQUEUED)\|" <<<"$listing"; then
    ours_lines <<<"$listing" >"$STAGE/squeue.preempted.txt"
  fi
  [[ -n $(restarted) ]] && all_in_state "$PREEMPTOR" RUNNING
}
PREEMPTED=''
if (DEADLINE=30 wait_until "a besteffort task preempted" preempted); then
  PREEMPTED=$(restarted | paste -sd,)
  PREEMPTION="task $PREEMPTED preempted and requeued: PENDING (BeginTime) at the moment \`running\`"
else
  PREEMPTION="none preempted (the node was busy with other users' debug jobs)"
  log "no preemption seen: going on without it"
fi

record running

# ---- end of everything ------------------------------------------------------------------------------------
ended() { local id; for id in "$@"; do
  ! tasks "$id" | grep -Eq ' (PENDING|RUNNING|SUSPENDED|COMPLETING|CONFIGURING|REQUEUED|PREEMPTED) ' || return 1
done; }
LEFT=()  # all but the timeout job, which must end on its own
for id in "${SUBMITTED[@]}"; do [[ $id == "$TIMEOUT" ]] || LEFT+=("$id"); done
as_user scancel "${LEFT[@]}"
wait_until "every task ended" ended "${LEFT[@]}"
if [[ $WITH_TIMEOUT == 1 ]]; then DEADLINE=100 wait_until "timeout TIMEOUT" all_in_state "$TIMEOUT" TIMEOUT; fi
record ended
# finished jobs as jobcomp/filetxt has them: read as root (the test user gets "Permission denied"); array
# tasks are listed under their raw job ids, so ask for those too
ids=$({ printf '%s\n' "${SUBMITTED[@]}"; as_user squeue -h -r -t all -j "$(IFS=,; echo "${SUBMITTED[*]}")" -o %A; } |
  sort -un | paste -sd,)
sacct -c -n -P -o jobid,state,exitcode -j "$ids" >"$STAGE/sacct.ended.txt" 2>/dev/null || die "sacct -c failed"
# the fields SlurmSsh._accounting asks slurmdbd for
sacct -c -n -P -X -o JobID,State,ExitCode,Start,End -j "$ids" >"$STAGE/sacct-accounting.ended.txt" 2>/dev/null ||
  die "sacct -c failed"
raw_ids=$(as_user squeue -h -r -t all -j "$(IFS=,; echo "${SUBMITTED[*]}")" -o "%i=%A" | sort -t_ -k1,1n -k2,2n |
  paste -sd' ')
{
  for i in "${!SUBMITTED[@]}"; do echo "${SCENARIOS[$i]%% *} ${SUBMITTED[$i]} ${SCENARIOS[$i]#* }"; done
  if [[ -n $PREEMPTED ]]; then echo "preempted $PREEMPTED"; fi
} >"$STAGE/arrays.txt"
rest ping >"$STAGE/rest-ping.json"

# ---- README -----------------------------------------------------------------------------------------------
scenario_line() {  # $1 scenario, $2 array id, $3 what
  if [[ -n $2 ]]; then printf '| \x60%s%s\x60 | %s | %s |\n' "$PREFIX" "$1" "$2" "$3"; fi
}
listing() {  # $1 squeue file
  printf '```\n'; sort -t_ -k1,1n -k2,2n "$1"; printf '```\n'
}
# shellcheck disable=SC2016 # the backquotes are Markdown's
{
  cat <<EOF
# Recorded Slurm outputs

Written by \`RECORD_TIMEOUT=$WITH_TIMEOUT scripts/record-slurm-outputs.sh\` (run as root on the local Slurm of \`scripts/slurm-local.sh\`;
the jobs run as \`$TEST_USER\`): do not edit by hand, re-run the script. Read by \`tests/test_slurm_parsers.py\`.

- Recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(sinfo -V), slurmrestd OpenAPI \`$REST_API\`, single node \`localhost\`
  (8 CPUs), partitions \`debug\` and \`besteffort\` (preempted by debug jobs and requeued).
- Other jobs (other users', other sessions') may have shared the node: they count in \`sinfo.*\` and
  \`rest-nodes.*\`; \`squeue.*\` and \`rest-jobs.*\` keep only the jobs below.

## Files (moment \`running\`: every scenario in its state; \`ended\`: after the script cancelled all it had left)

| file | command |
|---|---|
| \`squeue.<moment>.txt\` | \`squeue --me -h -r -t all -O "$SQUEUE_FIELDS"\` as $TEST_USER (the command of \`SlurmSsh._our_jobs\`); the lines of the jobs below, verbatim |
| \`squeue.preempted.txt\` | the same, at the first moment a besteffort task showed PREEMPTED or REQUEUED (absent when not caught) |
| \`sinfo.<moment>.txt\` | \`sinfo -h -o %C\` (allocated/idle/other/total CPUs) |
| \`rest-jobs.<moment>.json\` | \`GET /slurm/$REST_API/jobs\` with $TEST_USER's token; \`jobs\` kept to this run's arrays, every field as sent, re-indented |
| \`rest-nodes.<moment>.json\` | \`GET /slurm/$REST_API/nodes\` |
| \`arrays.txt\` | \`<scenario> <array job id> <tasks>\` of each job below, then \`preempted <task ids>\`, for the tests |
| \`rest-ping.json\` | \`GET /slurm/$REST_API/ping\` |
| \`sacct.ended.txt\` | \`sacct -c -n -P -o jobid,state,exitcode -j <array ids>,<raw task ids>\` as root (jobcomp/filetxt; stderr dropped) |
| \`sacct-accounting.ended.txt\` | the same with the fields of \`SlurmSsh._accounting\`: \`-X -o JobID,State,ExitCode,Start,End\` |

## Jobs (each an array; the comment is \`cigri batch of N tasks\`, as slurm-rest sets it)

| name | array id | what it does, and its state |
|---|---|---|
EOF
  scenario_line ok "$OK" '2 tasks `exit 0`: COMPLETED, exit_code 0'
  scenario_line fail "$FAIL" '`exit 3`: FAILED, reason NonZeroExitCode, exit_code 768 (wait status of 3)'
  scenario_line signal "$SIGNAL" '`kill -9 $$`: FAILED, reason JobLaunchFailure, exit_code 9 (killed by signal 9)'
  scenario_line wait "$WAIT" '3 tasks `--begin=now+1hour`: PENDING (BeginTime); task 2, cancelled while pending, is listed nowhere'
  scenario_line held "$HELD" '`--hold`: PENDING (JobHeldUser)'
  scenario_line run "$RUN" '2 tasks `sleep 300`: RUNNING; task 1 cancelled while running: CANCELLED (exit_code 15)'
  scenario_line suspend "$SUSPEND" '`sleep 300`, then `scontrol suspend` (root): SUSPENDED'
  scenario_line requeue "$REQUEUE" '`sleep 300`, then `scontrol requeuehold`: PENDING ("job requeued in held state")'
  scenario_line filler "$FILLER" "8 besteffort tasks \`sleep 300\` filling the idle CPUs: RUNNING / PENDING; $PREEMPTION"
  scenario_line preemptor "$PREEMPTOR" 'debug `sleep 300` submitted on the full node: preempts a filler task, RUNNING'
  scenario_line timeout "$TIMEOUT" '`--time=1` `sleep 90`: TIMEOUT (reason TimeLimit)'
  printf '\nAt the moment `ended`, every task that was PENDING, RUNNING or SUSPENDED is CANCELLED (by the script).\n'
  for moment in preempted running ended; do
    [[ -e $STAGE/squeue.$moment.txt ]] || continue
    printf '\n## squeue.%s.txt, sorted\n\n' "$moment"
    listing "$STAGE/squeue.$moment.txt"
  done
  printf '\n## sacct.ended.txt\n\nIt lists tasks under their raw job ids (task=raw id: %s), one line per run (a\n' "$raw_ids"
  printf 'preempted run is logged as PREEMPTED, a requeue as PENDING); a task cancelled while pending is not listed.\n\n```\n'
  cat "$STAGE/sacct.ended.txt"; printf '```\n'
} >"$STAGE/README.md"

mkdir -p "$OUT"
rm -f "$OUT"/squeue.*.txt "$OUT"/sinfo.*.txt "$OUT"/rest-*.json "$OUT"/sacct*.txt "$OUT/arrays.txt" "$OUT/README.md"
cp "$STAGE"/* "$OUT"/
log "fixtures written to $OUT"
