#!/usr/bin/env bash
# Single-node OAR 2.5.9 (Debian's packages) on 127.0.0.1 for cigri's CI: its own PostgreSQL cluster (port 5433),
# OAR's node sshd (6667), the OAR server (Almighty; 6666 on every address, which nothing in OAR changes), the
# REST API (oarapi) behind a private Apache on 6670, and a key-only sshd on 2223 for the test user, whose jobs
# OAR runs. Made for Debian 12 without systemd (PID 1 is not an init, we are root); the pitfalls behind the
# choices below are listed in /work/shared/notes/oar-local.md. Modelled on scripts/slurm-local.sh.
#
# Usage: scripts/oar-local.sh start|stop|status|env
#   start   install what is missing, write the configs, create the database and the 4 cores of node localhost,
#           then check each service by using it (SQL as OAR's database user, ssh as oar to the node, Almighty
#           listening and oarstat answering, GET whoami through the API as the test user, ssh as the test user
#           with oarsub on its PATH): start what is gone, restart what we started and fails its check (by its
#           recorded pid); then run a test job as the test user to its end and write $ENV_FILE. Idempotent.
#           Exits non-zero with one "FAILED <service>: <why>" line per service it could not bring up.
#   stop    stop only the daemons this script started (recorded as "pid starttime" in $RUN/owned.*).
#   status  the same checks, one line each (up/DOWN); non-zero exit if any fails.
#   env     print the env file (shell-sourceable KEY=value lines).
# The test user is not the Slurm tests' cigritest: at each job's end OAR kills the user's leftover processes and
# deletes every file the user owns under /tmp, /dev/shm and /var/tmp (tests give it folders in its home).
# Every daemon runs from /: CI starts this script from a temporary clone deleted afterwards.
set -euo pipefail

RUN=/run/oar-local                  # pid files, ownership records, env file (tmpfs: vanishes with the daemons)
ENV_FILE=$RUN/ci.env
LOG=/var/log/oar-local              # our daemons' logs; OAR's own is /var/log/oar.log
OAR_LOG=/var/log/oar.log
CONF_DIR=/etc/cigri-oar             # our files: keys, secrets, Apache's and sshd's configs
SECRETS=$CONF_DIR/db.secrets        # the database users' passwords (root only)
STRESS_FILE=$RUN/stress_factor      # what GET stress_factor answers (tests write it; 0 without it)
OAR_CONF=/etc/oar/oar.conf
OAR_CONF_DIST=/usr/share/oar/oar-common/oar.conf
APACHE_CONF=$CONF_DIR/apache2.conf
SSHD_CONF=$CONF_DIR/sshd_config
NODE_SSHD_CONF=/etc/oar/sshd_config
SSH_KEY=$CONF_DIR/id_ed25519
TEST_USER=oartest
TEST_HOME=/home/$TEST_USER
PG_VERSION=15 PG_CLUSTER=oar PG_PORT=5433
API_PORT=6670 SSH_PORT=2223 NODE_SSH_PORT=6667 ALMIGHTY_PORT=6666
CORES=4                             # resources of node localhost, whatever the hardware has
DEADLINE=${OAR_LOCAL_DEADLINE:-60}  # seconds any one thing may take to come up
PKGS=(oar-server oar-server-pgsql oar-node oar-user oar-user-pgsql oar-restful-api libyaml-syck-perl
      libxml-dumper-perl postgresql "postgresql-$PG_VERSION" apache2 libapache2-mod-fcgid openssh-server
      openssh-client curl)
DAEMONS=(postgresql oar-node-sshd oar-server oar-api sshd)   # start order; stop uses the reverse
SSH_OPTS=(-p "$SSH_PORT" -i "$SSH_KEY" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
          -o LogLevel=ERROR -o ConnectTimeout=5)

log() { echo "oar-local: $*" >&2; }
die() {  # $1 one-line message, $2 optional log file whose tail helps
  echo "oar-local: ERROR: $1" >&2
  if [[ -n ${2:-} && -f $2 ]]; then echo "--- tail of $2:" >&2; tail -n 20 "$2" >&2; fi
  exit 1
}

# --- process bookkeeping ---------------------------------------------------------------------------------------
# shellcheck source=scripts/daemons.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/daemons.sh"  # proc_id, own, ensure, stop_one...
stop_signal() { case $1 in postgresql) echo INT ;; *) echo TERM ;; esac; }  # INT: PostgreSQL's fast shutdown
log_of() {
  case $1 in
    postgresql) echo "/var/log/postgresql/postgresql-$PG_VERSION-$PG_CLUSTER.log" ;;
    oar-server) echo "$OAR_LOG" ;;
    oar-api) echo "$LOG/apache-error.log" ;;
    *) echo "$LOG/$1.log" ;;
  esac
}
tail_log() {  # $1 daemon: the end of its log, to stderr, for a failure's cause
  local f; f=$(log_of "$1")
  if [[ -f $f ]]; then echo "--- tail of $f:" >&2; tail -n 10 "$f" >&2; fi
}
pid_file() {  # $1 daemon: the pid file it writes itself
  case $1 in
    postgresql) echo "/var/lib/postgresql/$PG_VERSION/$PG_CLUSTER/postmaster.pid" ;;
    oar-server) echo /run/oar-server.pid ;;   # written by /usr/sbin/oar-server, not configurable
    *) echo "$RUN/$1.pid" ;;
  esac
}
daemon_pid() {  # $1 daemon: pid of the live process doing its job, ours first, else the one its pid file names
  local rec p
  if alive "$1"; then rec=$(cat "$RUN/owned.$1"); echo "${rec%% *}"; return 0; fi
  p=$(head -n1 "$(pid_file "$1")" 2>/dev/null) && [[ $p =~ ^[0-9]+$ ]] && proc_id "$p" >/dev/null && echo "$p"
}

# --- installation and configuration ------------------------------------------------------------------------------
install_pkgs() {
  local missing=() p blocker=0
  for p in "${PKGS[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) == ii* ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  mkdir -p "$LOG"
  # Postinst scripts must not start Debian's services (PostgreSQL's main cluster, Apache on port 80, OAR's
  # init scripts): a policy-rc.d that denies them, for the install only, where the machine has none.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod 0755 /usr/sbin/policy-rc.d; blocker=1
  fi
  # --no-upgrade: never upgrade what is there (perl, postgresql-common) to bring these in
  { apt-get update -q && apt-get install -y -q --no-install-recommends --no-upgrade "${missing[@]}"; } \
    >"$LOG/apt.log" 2>&1 || { ((blocker)) && rm -f /usr/sbin/policy-rc.d; die "apt-get failed" "$LOG/apt.log"; }
  if ((blocker)); then rm -f /usr/sbin/policy-rc.d; fi
}

setup_users() {
  id oar &>/dev/null || die "the oar user is missing (oar-common's postinst makes it)"
  id "$TEST_USER" &>/dev/null || useradd --create-home --home-dir "$TEST_HOME" --shell /bin/bash "$TEST_USER"
  # useradd locks the password ("!"); sshd without PAM then refuses even key logins. "*" = no password, not locked.
  if [[ $(getent shadow "$TEST_USER" | cut -d: -f2) == '!'* ]]; then usermod -p '*' "$TEST_USER"; fi
}

write_if_changed() {  # $1 path, $2 mode, [$3 owner]; content on stdin. Succeeds only if the file was (re)written.
  local tmp; tmp=$(mktemp)
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; return 1; fi
  install -m "$2" ${3:+-o "$3"} "$tmp" "$1"; rm -f "$tmp"
}

secret() { sed -n "s/^$1=//p" "$SECRETS"; }
make_secrets() {
  [[ -s $SECRETS ]] && return 0
  (umask 077; {
    echo "DB_PASS=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
    echo "DB_RO_PASS=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  } >"$SECRETS")
}

cgroups_v1() { [[ -e /sys/fs/cgroup/cpuset/cpuset.cpus ]]; }

oar_conf() {  # Debian's oar.conf with our port, passwords and scheduler delay
  local sed_args=(
    -e "s/^DB_PORT=.*/DB_PORT=\"$PG_PORT\"/"
    -e "s/^DB_BASE_PASSWD=.*/DB_BASE_PASSWD=\"$(secret DB_PASS)\"/"
    -e "s/^DB_BASE_PASSWD_RO=.*/DB_BASE_PASSWD_RO=\"$(secret DB_RO_PASS)\"/"
    # above 0, a submission that comes "too early" waits up to 10 s in Almighty
    -e "s/^#*SCHEDULER_MIN_TIME_BETWEEN_2_CALLS=.*/SCHEDULER_MIN_TIME_BETWEEN_2_CALLS=0/"
  )
  # the cgroup job manager needs cgroup v1 controllers: without them, no cpusets
  cgroups_v1 || sed_args+=(-e 's/^\(JOB_RESOURCE_MANAGER_PROPERTY_DB_FIELD=\)/#\1/' -e 's/^\(CPUSET_PATH=\)/#\1/')
  echo "# Written by cigri scripts/oar-local.sh from $OAR_CONF_DIST. Local edits are overwritten."
  sed "${sed_args[@]}" "$OAR_CONF_DIST"
  # Debian's sample stress_factor.sh answers the server's raw load average (above 1 on a busy 2-core box):
  # ours answers what the tests set in $STRESS_FILE, 0 by default
  echo "API_STRESS_FACTOR_SCRIPT=\"$CONF_DIR/stress_factor.sh\""
}

stress_script() {
  cat <<EOF
#!/bin/sh
# Written by cigri scripts/oar-local.sh: GET stress_factor answers what $STRESS_FILE holds (0 without it).
echo "GLOBAL_STRESS=\$(cat $STRESS_FILE 2>/dev/null || echo 0)"
EOF
}

apache_conf() {
  local m=/usr/lib/apache2/modules
  cat <<EOF
# Written by cigri scripts/oar-local.sh: OAR's REST API on 127.0.0.1:$API_PORT only, for CI.
ServerRoot /etc/apache2
ServerName 127.0.0.1
Listen 127.0.0.1:$API_PORT
PidFile $RUN/oar-api.pid
DefaultRuntimeDir $RUN/apache2
Mutex file:$RUN/apache2 default
# oarapi.cgi is not setuid: it must run as oar already
User oar
Group oar
ErrorLog $LOG/apache-error.log
LogLevel warn
LoadModule mpm_event_module $m/mod_mpm_event.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule authz_host_module $m/mod_authz_host.so
LoadModule alias_module $m/mod_alias.so
LoadModule env_module $m/mod_env.so
LoadModule rewrite_module $m/mod_rewrite.so
LoadModule fcgid_module $m/mod_fcgid.so
FcgidIPCDir $RUN/fcgid
FcgidProcessTableFile $RUN/fcgid/shm
FcgidMaxProcessesPerClass 4
# oarapi.pl exits after its 51st request: fcgid must not hand it one more (that one would get an HTTP 500)
FcgidMaxRequestsPerProcess 50
# the PATH_TRANSLATED of oarapi's PATH_INFO is looked up here (else each request logs a denial)
DocumentRoot /usr/lib/cgi-bin/oarapi
<Directory />
  Require all denied
</Directory>
Alias /oarapi /usr/lib/cgi-bin/oarapi/oarapi.cgi
<Directory /usr/lib/cgi-bin/oarapi>
  Options +ExecCGI -MultiViews +FollowSymLinks
  SetHandler fcgid-script
  SetEnv OARCONFFILE $OAR_CONF
  Require local
</Directory>
# oarapi trusts X_REMOTE_IDENT (a front end's word, CiGri's auth "ident"). Apache leaves headers with an
# underscore out of a CGI's environment: copy the header into the variable oarapi also reads.
RewriteEngine On
RewriteCond %{HTTP:X_REMOTE_IDENT} ^([A-Za-z0-9._-]+)$
RewriteRule .* - [E=X_REMOTE_IDENT:%1]
EOF
}

sshd_conf() {
  cat <<EOF
# Written by cigri scripts/oar-local.sh: CI-only sshd, key login as $TEST_USER on 127.0.0.1:$SSH_PORT.
Port $SSH_PORT
ListenAddress 127.0.0.1
PidFile $RUN/sshd.pid
HostKey /etc/ssh/ssh_host_ed25519_key
PubkeyAuthentication yes
AuthorizedKeysFile $CONF_DIR/authorized_keys/%u
AllowUsers $TEST_USER
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin no
X11Forwarding no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
}

configure() {  # sets OAR_CHANGED / API_CHANGED / SSHD_CHANGED
  install -d -m 0755 "$RUN" "$LOG" "$CONF_DIR" "$CONF_DIR/authorized_keys" /run/sshd
  install -d -o oar -g oar -m 0755 "$RUN/fcgid" "$RUN/apache2"
  install -d -o postgres -g postgres -m 2775 /run/postgresql
  make_secrets
  OAR_CHANGED=0 API_CHANGED=0 SSHD_CHANGED=0
  if oar_conf | write_if_changed "$OAR_CONF" 0600 oar; then OAR_CHANGED=1; log "wrote $OAR_CONF"; fi
  if apache_conf | write_if_changed "$APACHE_CONF" 0644; then API_CHANGED=1; fi
  stress_script | write_if_changed "$CONF_DIR/stress_factor.sh" 0755 || true
  if sshd_conf | write_if_changed "$SSHD_CONF" 0644; then SSHD_CHANGED=1; fi
  [[ -s $SSH_KEY ]] || ssh-keygen -q -t ed25519 -N '' -C cigri-oar-ci -f "$SSH_KEY"
  write_if_changed "$CONF_DIR/authorized_keys/$TEST_USER" 0644 <"$SSH_KEY.pub" || true
  ssh-keygen -A >/dev/null
  [[ -s /etc/oar/oar_ssh_host_rsa_key ]] || ssh-keygen -q -t rsa -N '' -f /etc/oar/oar_ssh_host_rsa_key
  touch "$OAR_LOG"; chown oar:oar "$OAR_LOG"
}

pg_cluster() {  # our own cluster (the machine's others untouched): peer login over the socket, passwords over TCP
  if [[ ! -d /etc/postgresql/$PG_VERSION/$PG_CLUSTER ]]; then
    log "creating PostgreSQL cluster $PG_VERSION/$PG_CLUSTER on port $PG_PORT"
    pg_createcluster "$PG_VERSION" "$PG_CLUSTER" -p "$PG_PORT" -- --auth-local=peer --auth-host=scram-sha-256 \
      >"$LOG/pg_createcluster.log" 2>&1 || die "pg_createcluster failed" "$LOG/pg_createcluster.log"
  fi
  local conf=/etc/postgresql/$PG_VERSION/$PG_CLUSTER/postgresql.conf
  if ! grep -qx "listen_addresses = '127.0.0.1'" "$conf"; then
    echo "listen_addresses = '127.0.0.1'" >>"$conf"; stop_one postgresql
  fi
}

psql_admin() { runuser -u postgres -- psql -X -q -p "$PG_PORT" -v ON_ERROR_STOP=1 -Atc "$1"; }
db_exists() { [[ $(psql_admin "select 1 from pg_database where datname = 'oar'" 2>/dev/null) == 1 ]]; }

make_database() {  # the oar database and its users; their passwords are ours (a lost secrets file is mended)
  if ! db_exists; then
    log "creating OAR's database"
    # oar-database logs in over TCP as a database admin: postgres, with a password for the time it takes
    local admin; admin=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    psql_admin "alter user postgres password '$admin'" >/dev/null
    oar-database --create --db-admin-user postgres --db-admin-pass "$admin" >"$LOG/oar-database.log" 2>&1 ||
      { psql_admin "alter user postgres password null" >/dev/null; die "oar-database --create failed" "$LOG/oar-database.log"; }
    psql_admin "alter user postgres password null" >/dev/null
  fi
  if ! db_login_ok; then
    psql_admin "alter user oar password '$(secret DB_PASS)'; alter user oar_ro password '$(secret DB_RO_PASS)'" >/dev/null
  fi
}

make_resources() {  # $CORES cores on node localhost (cpusets wrap over the machine's CPUs), all Alive
  local props; props=$(oarproperty -l)
  grep -qx host <<<"$props" || oarproperty -c -a host >/dev/null
  grep -qx cpu <<<"$props" || oarproperty -a cpu >/dev/null
  grep -qx core <<<"$props" || oarproperty -a core >/dev/null
  local have c cpus; cpus=$(nproc)
  have=$(db_query "select count(*) from resources where network_address = 'localhost'")
  for ((c = have + 1; c <= CORES; c++)); do
    oarnodesetting -a -h localhost -p host=localhost -p cpu=1 -p core="$c" -p cpuset=$(((c - 1) % cpus)) >/dev/null
  done
  if [[ $(db_query "select count(*) from resources where network_address = 'localhost' and state = 'Alive'") != "$CORES" ]]; then
    oarnodesetting -h localhost -s Alive >/dev/null
  fi
}

# --- checks ----------------------------------------------------------------------------------------------------
# check_<daemon> uses the service as its clients do and prints one line: what was checked, or why it failed.
db_query() { PGPASSWORD=$(secret DB_PASS) psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U oar -d oar -Atc "$1" 2>/dev/null; }
db_login_ok() { [[ $(db_query 'select 1') == 1 ]]; }
env_get() { sed -n "s/^$1=//p" "$ENV_FILE" 2>/dev/null; }
cwd_ok() {  # $1 daemon: not running from a deleted folder
  local pid cwd
  pid=$(daemon_pid "$1") && cwd=$(readlink "/proc/$pid/cwd") || return 0
  [[ $cwd != *' (deleted)' ]] && return 0
  echo "runs from $cwd"; return 1
}
check_postgresql() {
  [[ $(psql_admin 'select 1' 2>/dev/null) == 1 ]] || { echo "no SQL answer on port $PG_PORT"; return 1; }
  cwd_ok postgresql && echo "SQL on port $PG_PORT"
}
check_oar-node-sshd() {
  runuser -u oar -- ssh -p "$NODE_SSH_PORT" -o BatchMode=yes -o ConnectTimeout=5 localhost true >/dev/null 2>&1 ||
    { echo "ssh as oar to localhost:$NODE_SSH_PORT failed"; return 1; }
  cwd_ok oar-node-sshd && echo "ssh as oar to localhost:$NODE_SSH_PORT"
}
check_oar-server() {
  ss -Hltn "sport = :$ALMIGHTY_PORT" 2>/dev/null | grep -q . || { echo "nothing listens on port $ALMIGHTY_PORT"; return 1; }
  local out; out=$(runuser -u "$TEST_USER" -- oarstat -J 2>&1) || { echo "oarstat failed: ${out//$'\n'/ }"; return 1; }
  cwd_ok oar-server && echo "Almighty on port $ALMIGHTY_PORT, oarstat as $TEST_USER"
}
check_oar-api() {
  local out
  out=$(curl -s -m 10 -H "X_REMOTE_IDENT: $TEST_USER" "http://127.0.0.1:$API_PORT/oarapi/whoami.json") || true
  [[ $out == *"\"authenticated_user\" : \"$TEST_USER\""* || $out == *"\"authenticated_user\":\"$TEST_USER\""* ]] ||
    { echo "GET whoami as $TEST_USER on port $API_PORT answered: ${out:0:120}"; return 1; }
  cwd_ok oar-api && echo "GET whoami as $TEST_USER on port $API_PORT"
}
check_sshd() {
  ssh "${SSH_OPTS[@]}" "$TEST_USER@127.0.0.1" 'command -v oarsub' >/dev/null 2>&1 ||
    { echo "ssh $TEST_USER@127.0.0.1:$SSH_PORT failed (or oarsub is not on its PATH)"; return 1; }
  cwd_ok sshd && echo "ssh $TEST_USER@127.0.0.1:$SSH_PORT"
}

# --- daemons -----------------------------------------------------------------------------------------------------
start_postgresql() {
  pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" start 9>&- >>"$LOG/postgresql.log" 2>&1 &&
    own_from_pidfile postgresql "$(pid_file postgresql)"
}
start_oar-node-sshd() {
  rm -f "$RUN/oar-node-sshd.pid"
  # OAR's sshd listens on every address unless told
  /usr/sbin/sshd -f "$NODE_SSHD_CONF" -o PidFile="$RUN/oar-node-sshd.pid" -o ListenAddress=127.0.0.1 \
    -E "$LOG/oar-node-sshd.log" 9>&- && own_from_pidfile oar-node-sshd "$RUN/oar-node-sshd.pid"
}
start_oar-server() {
  rm -f /run/oar-server.pid
  /usr/sbin/oar-server 9>&- && own_from_pidfile oar-server /run/oar-server.pid
}
start_oar-api() {
  rm -f "$RUN/oar-api.pid"
  /usr/sbin/apache2 -f "$APACHE_CONF" -k start 9>&- >>"$LOG/apache-error.log" 2>&1 &&
    own_from_pidfile oar-api "$RUN/oar-api.pid"
}
start_sshd() {
  /usr/sbin/sshd -t -f "$SSHD_CONF" 2>"$LOG/sshd.log" || { tail_log sshd; log "sshd config test failed"; return 1; }
  rm -f "$RUN/sshd.pid"
  /usr/sbin/sshd -f "$SSHD_CONF" -E "$LOG/sshd.log" 9>&- && own_from_pidfile sshd "$RUN/sshd.pid"
}

declare -A STATE=()   # daemon -> ok | restarted | failed, for this run
# shellcheck disable=SC2034  # read by ensure (scripts/daemons.sh)
declare -A NEEDS=([oar-server]=postgresql [oar-api]=postgresql)
FAILED=()


write_env() {
  (umask 022; cat >"$ENV_FILE.tmp" <<EOF
OAR_API_URL=http://127.0.0.1:$API_PORT/oarapi
OAR_USER=$TEST_USER
OAR_HOME=$TEST_HOME
OAR_SSH_HOST=127.0.0.1
OAR_SSH_PORT=$SSH_PORT
OAR_SSH_KEY=$SSH_KEY
OAR_CORES=$CORES
OAR_STRESS_FILE=$STRESS_FILE
OAR_VERSION=$(dpkg-query -W -f='${Version}' oar-server | cut -d- -f1)
EOF
  )
  mv -f "$ENV_FILE.tmp" "$ENV_FILE"   # no secret in it: the database passwords stay in $SECRETS
}

job_state() { runuser -u "$TEST_USER" -- oarstat -s -j "$1" 2>/dev/null | sed -n "s/^$1: //p"; }
job_done() { [[ $(job_state "$1") =~ ^(Terminated|Error)$ ]]; }
job_check() {
  # A real job as the test user, to its end: the server, the scheduler, the node's ssh, the cpuset manager.
  local out id state
  if ! out=$(cd "$TEST_HOME" && runuser -u "$TEST_USER" -- oarsub -n oar-local-health -O /dev/null -E /dev/null \
      -l core=1,walltime=0:05:00 true 2>&1); then
    fail oar-server "oarsub as $TEST_USER failed: ${out//$'\n'/ }"; return 0
  fi
  id=$(sed -n 's/^OAR_JOB_ID=//p' <<<"$out")
  if ! wait_until job_done "$id"; then
    # a node busy with other jobs is healthy: the check job waits for a core, and is deleted
    if [[ $(db_query "select count(*) from jobs where state = 'Running'") != 0 ]]; then
      oardel "$id" >/dev/null 2>&1 || true; return 0
    fi
    tail_log oar-server; fail oar-server "test job $id as $TEST_USER is $(job_state "$id") after ${DEADLINE}s"
    oardel "$id" >/dev/null 2>&1 || true; return 0
  fi
  state=$(job_state "$id")
  [[ $state == Terminated ]] || fail oar-server "test job $id as $TEST_USER ended in $state (oarstat -f -j $id)"
}

# --- commands ------------------------------------------------------------------------------------------------------
cmd_start() {
  install_pkgs
  setup_users
  configure
  pg_cluster
  if ((OAR_CHANGED)); then stop_one oar-api; stop_one oar-server; fi
  if ((API_CHANGED)); then stop_one oar-api; fi
  if ((SSHD_CHANGED)); then stop_one sshd; fi
  ensure postgresql
  if [[ ${STATE[postgresql]} != failed ]]; then make_database; fi
  ensure oar-node-sshd
  ensure oar-server
  if [[ ${STATE[oar-server]} != failed ]]; then make_resources; fi
  ensure oar-api
  ensure sshd
  write_env
  if [[ ${STATE[oar-server]} != failed && ${STATE[oar-node-sshd]} != failed ]]; then job_check; fi
  if ((${#FAILED[@]})); then
    local f; for f in "${FAILED[@]}"; do echo "oar-local: FAILED $f" >&2; done
    exit 1
  fi
  log "up: OAR $(env_get OAR_VERSION), $CORES cores on localhost, API $(env_get OAR_API_URL), ssh as $TEST_USER on 127.0.0.1:$SSH_PORT; env in $ENV_FILE"
}

cmd_stop() {
  local i
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do stop_one "${DAEMONS[i]}"; done
  rm -f "$ENV_FILE"
}

main 180 "$@"
