# The daemons' bookkeeping shared by scripts/slurm-local.sh and scripts/oar-local.sh (sourced, not run): which
# processes a script started (by pid and start time, never by name), waiting on checks, stopping, and ensure, which
# checks a daemon by using it and starts or restarts what is its own. The sourcing script defines RUN, DEADLINE,
# log, tail_log, log_of, daemon_pid, check_<daemon>, start_<daemon>, NEEDS and STATE, optionally mend_<daemon>
# and stop_signal (TERM when absent), die, DAEMONS, ENV_FILE, cmd_start and cmd_stop; it ends with `main WAIT "$@"`
# (cmd_status and main, the same for both, live here).
# shellcheck shell=bash disable=SC2004  # STATE is the sourcing script's associative array, not arithmetic

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
  local id; id=$(proc_id "$2") || { tail_log "$1"; log "$1 (pid $2) died right after its start"; return 1; }
  echo "$id" >"$RUN/owned.$1"
  log "started $1 (pid $2)"
}
wait_until() {  # command polled until it succeeds (0) or DEADLINE seconds pass (1)
  local end=$((SECONDS + DEADLINE))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || return 1
    sleep 0.2
  done
}
wait_check() {  # $1 daemon: poll its check until it passes (0) or DEADLINE seconds pass (1); WHY: its last failure
  local end=$((SECONDS + DEADLINE))
  until WHY=$(check_"$1"); do
    ((SECONDS < end)) || return 1
    sleep 0.2
  done
}
pidfile_ok() { local p; p=$(head -n1 "$1" 2>/dev/null) && [[ $p =~ ^[0-9]+$ ]] && proc_id "$p" >/dev/null; }
own_from_pidfile() {  # $1 daemon, $2 pid file written by the (self-daemonizing) daemon
  wait_until pidfile_ok "$2" || { tail_log "$1"; log "$1 wrote no pid file $2 within ${DEADLINE}s"; return 1; }
  own "$1" "$(head -n1 "$2")"
}
stop_one() {
  local pid end=$((SECONDS + 20)) sig; sig=$(declare -F stop_signal >/dev/null && stop_signal "$1" || echo TERM)
  if alive "$1"; then
    read -r pid _ <"$RUN/owned.$1"
    # SIGCONT too: a stopped process (SIGSTOP, a debugger) would hold the signal until it runs again.
    kill -"$sig" "$pid" 2>/dev/null || true; kill -CONT "$pid" 2>/dev/null || true
    while alive "$1" && ((SECONDS < end)); do sleep 0.1; done
    if alive "$1"; then log "$1 ignored SIG$sig, killing"; kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped $1 (pid $pid)"
  fi
  rm -f "$RUN/owned.$1"
}
fail() { STATE[$1]=failed; FAILED+=("$1: $2"); }
ensure() {  # $1 daemon: check it by using it; restart it if ours and failing, start it if gone
  local d=$1 why pid dep=${NEEDS[$1]:-} how=started
  if [[ -n $dep && ${STATE[$dep]:-} == failed ]]; then fail "$d" "not checked: $dep is down"; return 0; fi
  # A daemon whose dependency has just come back may need a moment (slurmd re-registers ~4 s after slurmctld).
  if [[ -n $dep && ${STATE[$dep]:-} == restarted ]] && daemon_pid "$d" >/dev/null; then wait_check "$d" || true; fi
  if why=$(check_"$d"); then STATE[$d]=ok; return 0; fi
  if declare -F "mend_$d" >/dev/null && "mend_$d" "$why" && why=$(check_"$d"); then STATE[$d]=ok; return 0; fi
  if alive "$d"; then
    read -r pid _ <"$RUN/owned.$d"
    log "$d (pid $pid) fails its check ($why): restarting it"
    stop_one "$d"; how=restarted
  elif pid=$(daemon_pid "$d"); then
    fail "$d" "$why; pid $pid was not started by this script: mend or stop it, then start again"; return 0
  fi
  STATE[$d]=restarted
  "start_$d" || { fail "$d" "did not start (see $(log_of "$d"))"; return 0; }
  if ! wait_check "$d"; then
    alive "$d" || WHY+=", and it has exited"
    tail_log "$d"; fail "$d" "$WHY, ${DEADLINE}s after it was $how (see $(log_of "$d"))"
  fi
  return 0
}

cmd_status() {  # the checks of start, without mending anything
  local d why who pid bad=0
  for d in "${DAEMONS[@]}"; do
    if alive "$d"; then who="pid $(daemon_pid "$d")"
    elif pid=$(daemon_pid "$d"); then who="pid $pid, not started by this script"
    else who="no process started by this script"; fi
    if why=$(check_"$d"); then echo "$d: up ($why; $who)"; else echo "$d: DOWN ($why; $who)"; bad=1; fi
  done
  if [[ -s $ENV_FILE ]]; then echo "env: $ENV_FILE"; else echo "env: missing"; bad=1; fi
  return "$bad"
}

main() {  # $1 seconds to wait for the lock, then the script's arguments: start|stop|status|env, as root, from /
  local wait=$1; shift
  [[ $(id -u) == 0 ]] || die "must run as root"
  # From /, and so every daemon started: the caller's folder may be a temporary clone deleted after the run.
  cd /
  mkdir -p "$RUN"
  # Two concurrent starts would race on pid files. Daemons are started with 9>&- so they do not inherit the lock.
  exec 9>"$RUN/.lock"; flock -w "$wait" 9 || die "another $(basename "$0") holds $RUN/.lock"
  case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) [[ -s $ENV_FILE ]] || die "no $ENV_FILE: run '$0 start'"; cat "$ENV_FILE" ;;
    *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
  esac
}
