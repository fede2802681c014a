#!/usr/bin/env bash
# Single-node Slurm on 127.0.0.1 for cigri's CI: munge, slurmctld, slurmd, slurmrestd (JWT) and a key-only sshd
# on port 2222. Made for Debian 12 without systemd (PID 1 is not an init, we are root); the pitfalls behind the
# choices below are listed in /work/shared/notes/slurm-local.md.
#
# Usage: scripts/slurm-local.sh start|stop|status|env
#   start   install what is missing, write the configs, then check each service by using it (munge round trip,
#           scontrol ping, node idle in sinfo, a REST ping with each token, ssh as the test user): start what is
#           gone, restart what we started and fails its check (by its recorded pid), restart the Slurm daemons
#           when slurm.conf changed; then run a test job and write $ENV_FILE. Idempotent and fast when all is up.
#           Exits non-zero with one "FAILED <service>: <why>" line per service it could not bring back.
#   stop    stop only the daemons this script started (recorded as "pid starttime" in $RUN/owned.*).
#   status  the same checks, one line each (up/DOWN); non-zero exit if any fails.
#   env     print the env file (shell-sourceable KEY=value lines).
# Every daemon runs from / (slurmctld and slurmd then move to their log folder): CI starts this script from a
# temporary clone deleted afterwards, and a slurmrestd left in a deleted folder exits at its next job submission
# ("getcwd failed: No such file or directory") while it still answers pings.
set -euo pipefail
# A caller that sourced ci.env carries its tokens: slurmctld started with SLURM_JWT in its environment exits
# ("AuthType change requires restart of all Slurm daemons"), e.g. when a test restarts it from pytest.
unset SLURM_JWT SLURM_JWT_USER

RUN=/run/slurm                      # pid files, ownership records, env file (tmpfs: vanishes with the daemons)
ENV_FILE=$RUN/ci.env
LOG=/var/log/slurm
CONF=/etc/slurm/slurm.conf
SPOOL=/var/spool/slurmctld
JWT_KEY=$SPOOL/jwt_hs256.key
SSHD_CONF=/etc/ssh/sshd_cigri_config  # our own file: the system sshd config stays untouched
KEY_DIR=/etc/cigri-ci
SSH_KEY=$KEY_DIR/id_ed25519
TEST_USER=cigritest
REST_HOST=127.0.0.1 REST_PORT=6820 SSH_PORT=2222
DEADLINE=${SLURM_LOCAL_DEADLINE:-30}  # seconds any one thing may take to come up
PKGS=(munge slurm-wlm slurmctld slurmd slurmrestd slurm-wlm-jwt-plugin openssh-server openssh-client curl)
DAEMONS=(munged slurmctld slurmd slurmrestd sshd)   # start order; stop uses the reverse
SSH_OPTS=(-p "$SSH_PORT" -i "$SSH_KEY" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
          -o LogLevel=ERROR -o ConnectTimeout=5)

log() { echo "slurm-local: $*" >&2; }
die() {  # $1 one-line message, $2 optional log file whose tail helps
  echo "slurm-local: ERROR: $1" >&2
  if [[ -n ${2:-} && -f $2 ]]; then echo "--- tail of $2:" >&2; tail -n 20 "$2" >&2; fi
  exit 1
}

# --- process bookkeeping ---------------------------------------------------------------------------------------
# shellcheck source=scripts/daemons.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/daemons.sh"  # proc_id, own, ensure, stop_one...
log_of() { case $1 in munged) echo /var/log/munge/munged.log ;; *) echo "$LOG/$1.log" ;; esac; }
tail_log() {  # $1 daemon: the end of its log, to stderr, for a failure's cause
  local f; f=$(log_of "$1")
  if [[ -f $f ]]; then echo "--- tail of $f:" >&2; tail -n 10 "$f" >&2; fi
}
pid_file() {  # $1 daemon: the pid file it writes itself (slurmrestd writes none)
  case $1 in munged) echo /run/munge/munged.pid ;; slurmrestd) echo /nonexistent ;; *) echo "$RUN/$1.pid" ;; esac
}
daemon_pid() {  # $1 daemon: pid of the live process doing its job, ours first, else the one its pid file names
  local rec p
  if alive "$1"; then rec=$(cat "$RUN/owned.$1"); echo "${rec%% *}"; return 0; fi
  p=$(cat "$(pid_file "$1")" 2>/dev/null) && [[ $p =~ ^[0-9]+$ ]] && proc_id "$p" >/dev/null &&
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == "$1" ]] && echo "$p"
}

# --- installation and configuration ------------------------------------------------------------------------------
install_pkgs() {
  local missing=() p
  for p in "${PKGS[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) == ii* ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  # Without systemd the postinsts print "policy-rc.d denied execution of start": harmless, we start daemons ourselves.
  export DEBIAN_FRONTEND=noninteractive
  # the log goes with Slurm's (not /tmp: a CI run leaves nothing there)
  mkdir -p "$LOG"
  { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
    >"$LOG/apt.log" 2>&1 || die "apt-get failed" "$LOG/apt.log"
}

setup_users() {
  id slurm &>/dev/null || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin slurm
  # slurmrestd refuses to run as root (or as SlurmUser), so it gets its own system user.
  id slurmrestd &>/dev/null || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin slurmrestd
  id "$TEST_USER" &>/dev/null || useradd --create-home --home-dir "/home/$TEST_USER" --shell /bin/bash "$TEST_USER"
  # useradd locks the password ("!"); sshd without PAM then refuses even key logins. "*" = no password, not locked.
  if [[ $(getent shadow "$TEST_USER" | cut -d: -f2) == '!'* ]]; then usermod -p '*' "$TEST_USER"; fi
}

write_if_changed() {  # $1 path, $2 mode; content on stdin. Succeeds only if the file was (re)written.
  local tmp; tmp=$(mktemp)
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; return 1; fi
  install -m "$2" "$tmp" "$1"; rm -f "$tmp"
}

slurm_conf() {
  cat <<EOF
# Written by cigri scripts/slurm-local.sh: single node on 127.0.0.1 for CI. Local edits are overwritten.
ClusterName=cigri
SlurmctldHost=localhost
SlurmUser=slurm
AuthType=auth/munge
# auth/jwt (package slurm-wlm-jwt-plugin) lets slurmrestd forward users' tokens.
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$JWT_KEY
StateSaveLocation=$SPOOL
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
# No cgroups needed: plain process tracking, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MailProg=/bin/true
# No slurmdbd: finished jobs go to a text file, read with "sacct -c"; they stay in memory for MinJobAge seconds.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG/jobcomp.log
MinJobAge=300
# Default batch_sched_delay=3 adds up to 3 s before each job starts.
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
# 8 CPUs whatever the hardware has, so arrays run in parallel on a 2-core CI box.
SlurmdParameters=config_overrides
NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=8000 State=UNKNOWN
# debug jobs (higher tier) preempt besteffort jobs, which are requeued.
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF
PartitionName=besteffort Nodes=localhost MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE
EOF
}

sshd_conf() {
  cat <<EOF
# Written by cigri scripts/slurm-local.sh: CI-only sshd, key login on 127.0.0.1:$SSH_PORT.
Port $SSH_PORT
ListenAddress 127.0.0.1
PidFile $RUN/sshd.pid
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_rsa_key
PubkeyAuthentication yes
# Per-user files in our own directory: only root and $TEST_USER get in, and no home directory is edited.
AuthorizedKeysFile $KEY_DIR/authorized_keys/%u
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
X11Forwarding no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
}

configure() {  # sets SLURM_CHANGED / SSHD_CHANGED
  install -d -m 0755 "$RUN" /etc/slurm /var/spool/slurmd "$KEY_DIR" "$KEY_DIR/authorized_keys"
  install -d -o slurm -g slurm -m 0755 "$LOG" "$SPOOL"
  install -d -o munge -g munge -m 0755 /run/munge     # tmpfs: not there after a reboot
  install -d -m 0755 /run/sshd                         # sshd's privilege-separation directory
  if [[ ! -s /etc/munge/munge.key ]]; then            # normally made by munge's postinst
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
  fi
  if [[ ! -s $JWT_KEY ]]; then
    dd if=/dev/urandom of="$JWT_KEY" bs=32 count=1 status=none
    chown slurm:slurm "$JWT_KEY"; chmod 0600 "$JWT_KEY"
  fi
  SLURM_CHANGED=0 SSHD_CHANGED=0
  if slurm_conf | write_if_changed "$CONF" 0644; then SLURM_CHANGED=1; log "wrote $CONF"; fi
  if sshd_conf | write_if_changed "$SSHD_CONF" 0644; then SSHD_CHANGED=1; fi
  [[ -s $SSH_KEY ]] || ssh-keygen -q -t ed25519 -N '' -C cigri-ci -f "$SSH_KEY"
  ssh-keygen -A >/dev/null                             # host keys, if the postinst did not make them
  local u; for u in root "$TEST_USER"; do write_if_changed "$KEY_DIR/authorized_keys/$u" 0644 <"$SSH_KEY.pub" || true; done
}

# --- checks ----------------------------------------------------------------------------------------------------
# check_<daemon> uses the service as its clients do. It prints one line: what was checked (success) or why it
# failed (failure). A live process is not enough: a slurmrestd can listen and never answer, or run from a folder
# since deleted. The REST check reads its URL and tokens from $ENV_FILE, so status tests what the tests will use.
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
ctld_ok() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
node_state() { sinfo -h -N -n localhost -p debug -o %T 2>/dev/null; }
node_ok() { [[ $(node_state) =~ ^(idle|mixed|allocated|completing)$ ]]; }
openapi_version() {  # newest openapi/v0.0.x plugin offered (v0.0.38 on Debian 12's 22.05)
  runuser -u slurmrestd -- slurmrestd -s list 2>&1 | grep -o 'openapi/v0\.0\.[0-9]*' | sort -V | tail -n1 | cut -d/ -f2
}
env_get() { sed -n "s/^$1=//p" "$ENV_FILE" 2>/dev/null; }
rest_ping() {  # $1 user, $2 token: slurmctld is UP through slurmrestd; else prints the HTTP status (000: no answer)
  local out
  out=$(curl -s -m 5 -w '\n%{http_code}' -H "X-SLURM-USER-NAME: $1" -H "X-SLURM-USER-TOKEN: $2" \
    "$(env_get SLURMRESTD_URL)/slurm/$(env_get SLURMRESTD_API)/ping") || true
  [[ ${out##*$'\n'} == 200 && $out == *'"UP"'* ]] && return 0
  echo "${out##*$'\n'}"; return 1
}
cwd_ok() {  # $1 daemon: ours runs from / or a folder of its own; anyone's must not run from a deleted folder
  local pid cwd
  pid=$(daemon_pid "$1") && cwd=$(readlink "/proc/$pid/cwd") || return 0   # no process: the usage check tells
  case $cwd in
    *' (deleted)') ;;
    / | "$LOG" | "$SPOOL" | /var/spool/slurmd) return 0 ;;   # slurmctld and slurmd chdir to their log folder
    *) alive "$1" || return 0 ;;                              # not ours: not ours to judge where it runs
  esac
  echo "runs from $cwd, not from / or a folder of its own"; return 1
}
check_munged() {
  munge_ok || { echo "munge round trip failed"; return 1; }
  cwd_ok munged && echo "munge round trip"
}
check_slurmctld() {
  ctld_ok || { echo "scontrol ping: $(scontrol ping 2>&1 | head -n1)"; return 1; }
  cwd_ok slurmctld && echo "scontrol ping"
}
check_slurmd() {
  local state; state=$(node_state) || true
  [[ $state =~ ^(idle|mixed|allocated|completing)$ ]] || { echo "node localhost is ${state:-unknown to sinfo}"; return 1; }
  cwd_ok slurmd && echo "node localhost $state"
}
check_slurmrestd() {
  local user var code
  [[ -s $ENV_FILE ]] || { echo "no tokens: $ENV_FILE is missing"; return 1; }
  for user in root "$TEST_USER"; do
    var=SLURM_JWT; [[ $user == root ]] || var=SLURM_JWT_USER
    if ! code=$(rest_ping "$user" "$(env_get $var)"); then
      if [[ $code == 000 ]]; then echo "no answer to a REST ping as $user on $(env_get SLURMRESTD_URL)"
      else echo "REST ping as $user rejected: HTTP $code"; fi
      return 1
    fi
  done
  cwd_ok slurmrestd && echo "REST ping as root and $TEST_USER"
}
check_sshd() {
  # sshd gives non-interactive sessions a minimal PATH: check the Slurm commands are on it.
  ssh "${SSH_OPTS[@]}" "$TEST_USER@127.0.0.1" 'command -v sbatch' >/dev/null 2>&1 ||
    { echo "ssh $TEST_USER@127.0.0.1:$SSH_PORT failed (or sbatch is not on its PATH)"; return 1; }
  cwd_ok sshd && echo "ssh $TEST_USER@127.0.0.1:$SSH_PORT"
}

# --- daemons -----------------------------------------------------------------------------------------------------
# start_<daemon> starts it and records it as ours; non-zero if it did not even get that far. The script runs
# from / (see the end), so they all start there. The pid files of the self-daemonizing ones are removed first:
# a stale one could name a live process that has since reused the pid.
start_munged() {
  rm -f /run/munge/munged.pid
  runuser -u munge -- /usr/sbin/munged --force 9>&- && own_from_pidfile munged /run/munge/munged.pid
}
start_slurmctld() {
  rm -f "$RUN/slurmctld.pid"
  /usr/sbin/slurmctld 9>&- && own_from_pidfile slurmctld "$RUN/slurmctld.pid"   # writes SlurmctldPidFile
}
start_slurmd() {
  rm -f "$RUN/slurmd.pid"
  /usr/sbin/slurmd -N localhost 9>&- && own_from_pidfile slurmd "$RUN/slurmd.pid"   # name independent of `hostname`
}
start_slurmrestd() {
  # SLURM_JWT=daemon makes rest_auth/jwt forward the clients' tokens (else every request is a 401).
  # Only the plain openapi plugin: the dbv0.0.x ones abort without slurmdbd. setsid keeps the pid (not a group leader).
  SLURM_JWT=daemon setsid /usr/sbin/slurmrestd -u slurmrestd -g slurmrestd -a rest_auth/jwt -s "openapi/$API" \
    "$REST_HOST:$REST_PORT" </dev/null >>"$LOG/slurmrestd.log" 2>&1 9>&- &
  own slurmrestd $!
}
start_sshd() {
  /usr/sbin/sshd -t -f "$SSHD_CONF" 2>"$LOG/sshd.log" || { tail_log sshd; log "sshd config test failed"; return 1; }
  rm -f "$RUN/sshd.pid"
  /usr/sbin/sshd -f "$SSHD_CONF" -E "$LOG/sshd.log" 9>&- && own_from_pidfile sshd "$RUN/sshd.pid"   # absolute path: sshd re-execs itself
}

# mend_<daemon> WHY: a cheaper cure than a restart, tried first. Rejected tokens: new ones (not a new slurmrestd).
mend_slurmrestd() { [[ $1 == *rejected* ]] && write_env force; }

declare -A STATE=()   # daemon -> ok | restarted | failed, for this run
# shellcheck disable=SC2034  # read by ensure (scripts/daemons.sh)
declare -A NEEDS=([slurmctld]=munged [slurmd]=slurmctld [slurmrestd]=slurmctld)
FAILED=()             # one "service: why" per service not brought back


write_env() {  # [force]: new tokens even if the current ones look fine. Non-zero if slurmctld gave none.
  # Keep tokens across re-runs (start "changes nothing") while they are well within their 24 h and the key is unchanged.
  if [[ ${1:-} != force && -s $ENV_FILE && $ENV_FILE -nt $JWT_KEY && -n $(find "$ENV_FILE" -mmin -720) ]] &&
     grep -qx "SLURMRESTD_API=$API" "$ENV_FILE"; then return 0; fi
  local root_tok user_tok
  root_tok=$(scontrol token username=root lifespan=86400 2>/dev/null | sed -n 's/^SLURM_JWT=//p')
  user_tok=$(scontrol token username="$TEST_USER" lifespan=86400 2>/dev/null | sed -n 's/^SLURM_JWT=//p')
  [[ -n $root_tok && -n $user_tok ]] || return 1
  (umask 077; cat >"$ENV_FILE.tmp" <<EOF
SLURMRESTD_URL=http://$REST_HOST:$REST_PORT
SLURMRESTD_API=$API
SLURM_JWT=$root_tok
SLURM_JWT_USER=$user_tok
SLURM_TEST_USER=$TEST_USER
SSH_HOST=127.0.0.1
SSH_PORT=$SSH_PORT
SSH_KEY=$SSH_KEY
SLURM_PARTITION=debug
SLURM_BESTEFFORT_PARTITION=besteffort
EOF
  )
  mv -f "$ENV_FILE.tmp" "$ENV_FILE"   # 0600 root: holds tokens; the tests run as root
}

job_healthy() {  # $1 job id: it ran to its end, or runs, or waits only because other jobs hold the cores
  local s; s=$(scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]* Reason=[^ ]*')
  [[ $s =~ ^JobState=(COMPLETED|RUNNING|COMPLETING)\  || $s =~ ^JobState=PENDING\ Reason=(Resources|Priority)$ ]]
}

job_check() {
  # A real one-task job as the unprivileged user: munge, slurmctld and the user switch; slurmd and slurmstepd too
  # when a core is free. A busy node (every core taken by other jobs) is healthy: its job waits and is cancelled.
  # It runs in the best-effort partition, the lowest tier: in debug it would preempt (requeue) a best-effort job.
  local id
  if ! id=$(runuser -u "$TEST_USER" -- sbatch --parsable --chdir=/tmp -p besteffort -n1 -J slurm-local-health \
      -o /dev/null --wrap true 2>&1); then
    fail slurmctld "sbatch as $TEST_USER failed: ${id//$'\n'/ }"; return 0
  fi
  if ! wait_until job_healthy "$id"; then
    tail_log slurmd; fail slurmd "test job $id as $TEST_USER did not start within ${DEADLINE}s (see $LOG/slurmd.log)"
  fi
  scancel "$id" 2>/dev/null || true
}

# --- commands ------------------------------------------------------------------------------------------------------
cmd_start() {
  install_pkgs
  setup_users
  configure
  API=$(openapi_version || true)
  [[ -n $API ]] || die "slurmrestd offers no openapi/v0.0.x plugin"
  if ((SLURM_CHANGED)); then stop_one slurmrestd; stop_one slurmd; stop_one slurmctld; fi
  if ((SSHD_CHANGED)); then stop_one sshd; fi
  # Each in turn, after what it needs: one that cannot come back does not stop the checks of the others.
  ensure munged
  ensure slurmctld
  ensure slurmd
  if [[ ${STATE[slurmctld]:-} != failed ]] && ! write_env; then    # the REST check needs the tokens
    fail slurmctld "scontrol token failed (see $LOG/slurmctld.log)"
  fi
  ensure slurmrestd
  ensure sshd
  if [[ ${STATE[slurmd]:-} != failed ]]; then job_check; fi
  if ((${#FAILED[@]})); then
    local f; for f in "${FAILED[@]}"; do echo "slurm-local: FAILED $f" >&2; done
    exit 1
  fi
  log "up: slurm (partitions debug, besteffort), REST $API on $REST_HOST:$REST_PORT, ssh on 127.0.0.1:$SSH_PORT; env in $ENV_FILE"
}

cmd_stop() {
  local i
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do stop_one "${DAEMONS[i]}"; done
  rm -f "$ENV_FILE"    # its presence must not suggest that Slurm is up
}

main 120 "$@"
