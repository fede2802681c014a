#!/usr/bin/env bash
# Single-node Slurm on 127.0.0.1 for cigri's CI: munge, slurmctld, slurmd, slurmrestd (JWT) and a key-only sshd
# on port 2222. Made for Debian 12 without systemd (PID 1 is not an init, we are root); the pitfalls behind the
# choices below are listed in /work/shared/notes/slurm-local.md.
#
# Usage: scripts/slurm-local.sh start|stop|status|env
#   start   install what is missing, write the configs, start what is down (restart the Slurm daemons when
#           slurm.conf changed), run a health check, write $ENV_FILE. Idempotent and fast when already up.
#   stop    stop only the daemons this script started (recorded as "pid starttime" in $RUN/owned.*).
#   status  print what is up; non-zero exit if anything is down.
#   env     print the env file (shell-sourceable KEY=value lines).
set -euo pipefail

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
# "pid starttime" of a live process. Zombies count as dead: kill -0 succeeds on them and PID 1 here reaps slowly.
# The start time (field 22 of /proc/PID/stat) guards against a recycled PID.
proc_id() {
  local st f
  st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  read -ra f <<<"${st##*) }"        # drop "pid (comm) "; comm may contain spaces; f[0] is field 3 (state)
  [[ ${f[0]} != Z ]] || return 1
  echo "$1 ${f[19]}"
}
alive() {  # $1 daemon: is the process we recorded still that same live process?
  local rec; rec=$(cat "$RUN/owned.$1" 2>/dev/null) || return 1
  [[ $(proc_id "${rec%% *}") == "$rec" ]]
}
own() {  # $1 daemon, $2 pid: record a process this script started
  local id; id=$(proc_id "$2") || die "$1 (pid $2) died right after start" "$LOG/$1.log"
  echo "$id" >"$RUN/owned.$1"
}
wait_for() {  # $1 what, $2 log for the failure message, rest: command polled until it succeeds or the deadline
  local what=$1 logf=$2 end=$((SECONDS + DEADLINE)); shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || die "$what did not come up within ${DEADLINE}s" "$logf"
    sleep 0.2
  done
}
pidfile_ok() { local p; p=$(cat "$1" 2>/dev/null) && [[ $p =~ ^[0-9]+$ ]] && proc_id "$p" >/dev/null; }
own_from_pidfile() {  # $1 daemon, $2 pid file written by the (self-daemonizing) daemon
  wait_for "$1 pid file $2" "$LOG/$1.log" pidfile_ok "$2"
  own "$1" "$(cat "$2")"
}
stop_one() {
  local pid end=$((SECONDS + 15))
  if alive "$1"; then
    read -r pid _ <"$RUN/owned.$1"
    kill -TERM "$pid" 2>/dev/null || true
    while alive "$1" && ((SECONDS < end)); do sleep 0.1; done
    if alive "$1"; then log "$1 ignored SIGTERM, killing"; kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped $1 (pid $pid)"
  fi
  rm -f "$RUN/owned.$1"
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

# --- daemons -----------------------------------------------------------------------------------------------------
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
ctld_ok() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
node_ok() { [[ $(sinfo -h -N -n localhost -p debug -o %T 2>/dev/null) =~ ^(idle|mixed|allocated|completing)$ ]]; }
openapi_version() {  # newest openapi/v0.0.x plugin offered (v0.0.38 on Debian 12's 22.05)
  runuser -u slurmrestd -- slurmrestd -s list 2>&1 | grep -o 'openapi/v0\.0\.[0-9]*' | sort -V | tail -n1 | cut -d/ -f2
}
rest_ping() {  # $1 user, $2 token
  curl -sf -m 5 -H "X-SLURM-USER-NAME: $1" -H "X-SLURM-USER-TOKEN: $2" \
    "http://$REST_HOST:$REST_PORT/slurm/$API/ping" | grep -q '"UP"'
}

start_daemons() {
  if ((SLURM_CHANGED)); then stop_one slurmrestd; stop_one slurmd; stop_one slurmctld; fi
  if ((SSHD_CHANGED)); then stop_one sshd; fi
  # A munged that answers is fine even if someone else started it; we only record the one we start.
  if ! munge_ok; then
    runuser -u munge -- /usr/sbin/munged --force 9>&-
    own_from_pidfile munged /run/munge/munged.pid
    wait_for munged /var/log/munge/munged.log munge_ok
  fi
  if ! alive slurmctld; then
    /usr/sbin/slurmctld 9>&-                         # daemonizes, writes SlurmctldPidFile
    own_from_pidfile slurmctld "$RUN/slurmctld.pid"
  fi
  wait_for slurmctld "$LOG/slurmctld.log" ctld_ok
  if ! alive slurmd; then
    /usr/sbin/slurmd -N localhost 9>&-               # node name independent of `hostname`
    own_from_pidfile slurmd "$RUN/slurmd.pid"
  fi
  wait_for "node localhost" "$LOG/slurmd.log" node_ok
  API=$(openapi_version || true)
  [[ -n $API ]] || die "slurmrestd offers no openapi/v0.0.x plugin"
  if ! alive slurmrestd; then
    # SLURM_JWT=daemon makes rest_auth/jwt forward the clients' tokens (else every request is a 401).
    # Only the plain openapi plugin: the dbv0.0.x ones abort without slurmdbd. setsid keeps the pid (not a group leader).
    SLURM_JWT=daemon setsid /usr/sbin/slurmrestd -u slurmrestd -g slurmrestd -a rest_auth/jwt -s "openapi/$API" \
      "$REST_HOST:$REST_PORT" </dev/null >>"$LOG/slurmrestd.log" 2>&1 9>&- &
    own slurmrestd $!
  fi
  if ! alive sshd; then
    /usr/sbin/sshd -t -f "$SSHD_CONF" 2>"$LOG/sshd.log" || die "sshd config test failed" "$LOG/sshd.log"
    /usr/sbin/sshd -f "$SSHD_CONF" -E "$LOG/sshd.log" 9>&-   # absolute path: sshd re-execs itself
    own_from_pidfile sshd "$RUN/sshd.pid"
  fi
}

write_env() {
  # Keep tokens across re-runs (start "changes nothing") while they are well within their 24 h and the key is unchanged.
  if [[ -s $ENV_FILE && $ENV_FILE -nt $JWT_KEY && -n $(find "$ENV_FILE" -mmin -720) ]] &&
     grep -qx "SLURMRESTD_API=$API" "$ENV_FILE"; then return 0; fi
  local root_tok user_tok
  root_tok=$(scontrol token username=root lifespan=86400 | sed -n 's/^SLURM_JWT=//p')
  user_tok=$(scontrol token username="$TEST_USER" lifespan=86400 | sed -n 's/^SLURM_JWT=//p')
  [[ -n $root_tok && -n $user_tok ]] || die "scontrol token failed" "$LOG/slurmctld.log"
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

health_check() {
  # A real one-task job as the unprivileged user: munge, slurmctld and the user switch; slurmd and slurmstepd too
  # when a core is free. A busy node (every core taken by other jobs) is healthy: its job waits and is cancelled.
  local id
  id=$(runuser -u "$TEST_USER" -- sbatch --parsable --chdir=/tmp -p debug -n1 -J slurm-local-health -o /dev/null \
    --wrap true 2>&1) || die "sbatch as $TEST_USER failed: $id" "$LOG/slurmctld.log"
  wait_for "test job $id as $TEST_USER" "$LOG/slurmd.log" job_healthy "$id"
  scancel "$id" 2>/dev/null || true
  local tok_root tok_user
  tok_root=$(sed -n 's/^SLURM_JWT=//p' "$ENV_FILE"); tok_user=$(sed -n 's/^SLURM_JWT_USER=//p' "$ENV_FILE")
  wait_for "slurmrestd on $REST_HOST:$REST_PORT" "$LOG/slurmrestd.log" rest_ping "$TEST_USER" "$tok_user"
  rest_ping root "$tok_root" || die "REST ping with the root token failed" "$LOG/slurmrestd.log"
  # sshd gives non-interactive sessions a minimal PATH: check the Slurm commands are on it.
  wait_for "ssh $TEST_USER@127.0.0.1:$SSH_PORT" "$LOG/sshd.log" \
    ssh "${SSH_OPTS[@]}" "$TEST_USER@127.0.0.1" 'command -v sbatch && squeue -h -u nobody'
}

# --- commands ------------------------------------------------------------------------------------------------------
cmd_start() {
  install_pkgs
  setup_users
  configure
  start_daemons
  write_env
  health_check
  log "up: slurm (partitions debug, besteffort), REST $API on $REST_HOST:$REST_PORT, ssh on 127.0.0.1:$SSH_PORT; env in $ENV_FILE"
}

cmd_stop() {
  local i
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do stop_one "${DAEMONS[i]}"; done
  rm -f "$ENV_FILE"    # its presence must not suggest that Slurm is up
}

cmd_status() {
  local d bad=0 pid
  for d in "${DAEMONS[@]}"; do
    if alive "$d"; then read -r pid _ <"$RUN/owned.$d"; echo "$d: up (pid $pid)"
    elif [[ $d == munged ]] && munge_ok; then echo "munged: up (not started by this script)"
    else echo "$d: DOWN"; bad=1; fi
  done
  if ctld_ok && node_ok; then echo "node localhost: $(sinfo -h -N -n localhost -p debug -o %T)"; else echo "node localhost: DOWN"; bad=1; fi
  [[ -s $ENV_FILE ]] && echo "env: $ENV_FILE" || { echo "env: missing"; bad=1; }
  return "$bad"
}

[[ $(id -u) == 0 ]] || die "must run as root"
mkdir -p "$RUN"
# Two concurrent starts would race on pid files. Daemons are started with 9>&- so they do not inherit the lock.
exec 9>"$RUN/.lock"; flock -w 120 9 || die "another slurm-local.sh holds $RUN/.lock"
case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) [[ -s $ENV_FILE ]] || die "no $ENV_FILE: run '$0 start'"; cat "$ENV_FILE" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
