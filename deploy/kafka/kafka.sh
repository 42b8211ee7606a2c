#!/usr/bin/env bash
# The local Apache Kafka broker (KRaft, one combined broker+controller on 127.0.0.1), fetched from Maven Central.
# Usage: kafka.sh fetch | start [DATA_DIR] | stop [DATA_DIR] | status [DATA_DIR]
# start prints the bootstrap address (and only that) on stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$HERE/pom.xml")"
CACHE="${PREDIGEST_KAFKA_CACHE:-$HERE/../../.cache/kafka}"
LIBS="$CACHE/libs-$VERSION"
JAVA="${JAVA:-java}"

say() { echo "kafka.sh: $*" >&2; }

# A Ctrl-C reaches this script with the command that runs it (one process group) and ends it. Untrapped, bash takes
# a SIGINT that comes as a command it waits for exits 0 for one that command handled, and goes on; the stop's wait
# also forks no command substitution (`ours`, its loop), in which a Ctrl-C that came right after SIGTERM was lost
# (4 stops in 80; 0 in 230 since): the stop then ran to its bound and killed the broker.
# A start that launched the broker and is interrupted before it answers stops that broker (it was this start's:
# nobody uses it yet) rather than leave a JVM starting behind a command that exited; SIGTERM likewise.
trap 'interrupted 130' INT
trap 'interrupted 143' TERM
LAUNCHED=""

interrupted() {  # $1 = the exit code (128 + the signal)
  trap '' INT TERM  # a second Ctrl-C must not cut the broker's stop short: its caller leaves on it instead
  if [ -n "$LAUNCHED" ]; then
    local data="${LAUNCHED%:*}" pid="${LAUNCHED##*:}"
    halt "$pid" "$data"
    rm -f "$data/kafka.pid"
    say "interrupted during the start: the broker it launched (pid $pid) is stopped; its data stays in $data"
  fi
  exit "$1"
}

fetch() {
  if [ -f "$LIBS/.complete" ]; then return 0; fi
  say "fetching Apache Kafka $VERSION from Maven Central into $LIBS"
  mkdir -p "$LIBS"
  mvn -q -B -f "$HERE/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$LIBS" -DincludeScope=runtime >&2
  touch "$LIBS/.complete"
}

free_port() { python3 -c 'import signal,socket;signal.signal(signal.SIGINT,signal.SIG_DFL);s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

answers() {  # $1 = host:port; true when a Kafka ApiVersions round trip works
  python3 - "$1" <<'PY'
import signal, socket, struct, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)  # a Ctrl-C ends it silently, as it ends this script
host, port = sys.argv[1].rsplit(":", 1)
try:
    s = socket.create_connection((host, int(port)), timeout=2)
    req = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    s.sendall(struct.pack(">i", len(req)) + req)
    size = struct.unpack(">i", s.recv(4))[0]
    body = s.recv(size)
    sys.exit(0 if len(body) >= 6 and struct.unpack(">h", body[4:6])[0] == 0 else 1)
except Exception:
    sys.exit(1)
PY
}

serving() {  # $1 = data dir; true when its broker runs and answers
  [ -f "$1/kafka.pid" ] && ours "$(cat "$1/kafka.pid")" "$1" && [ -f "$1/bootstrap" ] && answers "$(cat "$1/bootstrap")"
}

# kafka.pid names the broker only while that process runs the broker of this data dir: after a crash, or a stop
# cut short (a second Ctrl-C reaches this script too), the pid may be free or another program's, never to be
# signalled. A zombie (exited, not reaped: in a container whose PID 1 does not reap) has an empty command line,
# so it is not running either: `kill -0` alone waited the whole stop bound for one, then said it was killed.
# Its server.properties by path, else as a file (-ef): a broker started through a symlink of its data dir (kafka.sh
# took the logical path before `pwd -P`) is still ours, not taken for a stale pid and left running unstopped.
ours() {  # $1 = pid, $2 = data dir, its physical path (`pwd -P`, as the broker is started with)
  local args parts
  if [ -r "/proc/$1/cmdline" ]; then
    # Read in this shell, not in a command substitution (see the trap above). The braces: a process gone since
    # the -r (its stop's wait) failed the `<` before a 2>/dev/null after it, and bash printed that failure.
    { mapfile -d '' parts < "/proc/$1/cmdline"; } 2>/dev/null || return 1
    args="${parts[*]}"
  else
    args="$(ps -p "$1" -o args= 2>/dev/null)" || return 1
  fi
  [[ "$args " == *" kafka.Kafka $2/server.properties "* ]] \
    || { [[ "$args" == *" kafka.Kafka "* ]] && [ "${args##* kafka.Kafka }" -ef "$2/server.properties" ]; }
}

stale() {  # $1 = data dir, $2 = the pid its kafka.pid names, which is not its broker
  local args=""
  { [ -r "/proc/$2/cmdline" ] && args="$(tr '\0' ' ' < "/proc/$2/cmdline")"; } 2>/dev/null || true
  if [[ "$args" == *" kafka.Kafka "* ]]; then  # a copied data dir, or a pid reused by another broker
    args="${args% }"
    say "kafka.pid named pid $2, which is the broker of another data dir (${args##* kafka.Kafka }), not of $1:" \
      "the stale file is removed, that broker left running"
  else
    say "kafka.pid named pid $2, which is not the broker of $1 (that broker exited): the stale file is removed"
  fi
  rm -f "$1/kafka.pid"
}

# One start of a data dir at a time: two at once both found no broker, and both formatted its storage and launched
# one. flock(1) on a file of the data dir, held until the script exits (fd 9; closed for the broker it launches).
lock() {  # $1 = data dir, $2 = what this script does (start | stop)
  exec 9>> "$1/kafka.lock"
  flock -n 9 && return 0
  if [ "$2" = stop ]; then return 0; fi  # a stop never waits: it must end a start that hangs
  say "another start or stop of the broker of $1 is in progress: waiting for it to end"
  flock 9
}

# With SO_REUSEADDR, as Kafka binds: the TIME_WAIT connections a stopped broker leaves on its port do not count
# as taken (without it a restart right after a stop formatted fresh storage), a live listener still does.
port_free() { python3 -c 'import signal,socket,sys;signal.signal(signal.SIGINT,signal.SIG_DFL);s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(("127.0.0.1",int(sys.argv[1])))' "$1" 2>/dev/null; }

launch() {  # $1 = data dir, $2 = port; starts the JVM and waits until it answers
  local data="$1" port="$2"
  # setsid: a Ctrl-C in the terminal that started it must not take the shared broker down with it once it answers
  # (before, this script's trap stops it: see `interrupted`).
  # A signal between the launch and its record would leave a broker running that no kafka.pid names (a next start
  # took its ports for another program's and formatted its storage under it): it waits for the record.
  local signalled=""
  trap 'signalled=130' INT
  trap 'signalled=143' TERM
  setsid nohup "$JAVA" "${OPTS[@]}" -cp "$LIBS/*" kafka.Kafka "$data/server.properties" >> "$data/kafka.log" 2>&1 9>&- &
  LAUNCHED="$data:$!"
  echo $! > "$data/kafka.pid"
  trap 'interrupted 130' INT
  trap 'interrupted 143' TERM
  if [ -n "$signalled" ]; then interrupted "$signalled"; fi
  echo "127.0.0.1:$port" > "$data/bootstrap"
  for _ in $(seq 1 180); do
    # Said, then no longer this start's to stop: a signal before the bootstrap is out stops it, after leaves it.
    if answers "127.0.0.1:$port"; then cat "$data/bootstrap"; LAUNCHED=""; return 0; fi
    # Its own pid, not kafka.pid's: a `kafka.sh stop` meanwhile (it does not wait for a start's lock) removes that.
    if ! kill -0 "${LAUNCHED##*:}" 2>/dev/null; then
      say "the broker (pid ${LAUNCHED##*:}) exited during its start (it failed, or a kafka.sh stop stopped it);" \
        "last lines of $data/kafka.log:"
      tail -20 "$data/kafka.log" >&2; return 1
    fi
    sleep 0.5
  done
  say "broker did not answer on 127.0.0.1:$port within 90 s; see $data/kafka.log"; return 1
}

start() {
  local data="${1:-$CACHE/run}"
  mkdir -p "$data"
  data="$(cd "$data" && pwd -P)"
  lock "$data" start
  if serving "$data"; then cat "$data/bootstrap"; return 0; fi
  if [ -f "$data/kafka.pid" ]; then
    local pid; pid="$(cat "$data/kafka.pid")"
    # No start or stop holds the lock, yet the broker runs unanswering: a stop cut short (it goes on stopping), or
    # a broker hung. A second broker would find its ports taken and format the storage under it.
    if ours "$pid" "$data"; then
      say "the broker of $data (pid $pid) runs but does not answer, and no start or stop of it is in progress" \
        "(a stop cut short, or a broker hung): stop it (predigest kafka stop), then start it again"
      return 1
    fi
    stale "$data" "$pid"
  fi
  fetch
  # A small broker on a shared 2-core host (docs/performance.md, "The local broker's JVM"): the serial collector
  # (no concurrent G1 threads; the producers' 4 MiB batches are ordinary young objects, not humongous ones) and
  # C1 only (C2's compiles cost more CPU than its code saves here, and ~1.5 s of each start).
  OPTS=(-Xms256m -Xmx768m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Dlog4j2.configurationFile="$HERE/log4j2.xml")
  # A restart keeps the topics: same storage, same ports, when both ports are still free.
  if [ -f "$data/server.properties" ] && [ -f "$data/logs/meta.properties" ]; then
    local oport ocport
    oport="$(sed -n 's/^listeners=PLAINTEXT:\/\/127.0.0.1:\([0-9]*\),.*/\1/p' "$data/server.properties")"
    ocport="$(sed -n 's/^controller.quorum.bootstrap.servers=127.0.0.1:\([0-9]*\)$/\1/p' "$data/server.properties")"
    if [ -n "$oport" ] && [ -n "$ocport" ] && port_free "$oport" && port_free "$ocport"; then
      say "restarting the broker on its previous storage and port $oport"
      launch "$data" "$oport"; return $?
    fi
    say "previous ports taken; formatting fresh storage"
  fi
  local port cport
  port="$(free_port)"; cport="$(free_port)"
  while [ "$cport" = "$port" ]; do cport="$(free_port)"; done
  cat > "$data/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$data/logs
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
message.max.bytes=8388608
replica.fetch.max.bytes=8388608
log.retention.hours=168
PROPS
  # New ports mean a new quorum address, so storage is formatted afresh.
  rm -rf "$data/logs"
  "$JAVA" "${OPTS[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format --standalone \
    --cluster-id "$(cluster_id)" \
    --config "$data/server.properties" >&2
  launch "$data" "$port"
}

# A random cluster id; one that starts with "-" would be read as an option (1 start in 64 failed), so such ids
# are drawn again, as Kafka's own Uuid.randomUuid does.
cluster_id() {
  python3 -c 'import base64,signal,uuid;signal.signal(signal.SIGINT,signal.SIG_DFL)
while (i := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"): pass
print(i)'
}

stop() {
  local data="${1:-$CACHE/run}"
  [ -f "$data/kafka.pid" ] || return 0
  data="$(cd "$data" && pwd -P)"
  lock "$data" stop  # held when free: a start meanwhile waits for this stop, then starts the broker afresh
  local pid; pid="$(cat "$data/kafka.pid")"
  if ! ours "$pid" "$data"; then stale "$data" "$pid"; return 0; fi
  halt "$pid" "$data"
  rm -f "$data/kafka.pid"
}

halt() {  # $1 = pid, $2 = data dir: SIGTERM, then SIGKILL once the stop bound has passed (said)
  local seconds="${PREDIGEST_KAFKA_STOP_SECONDS:-30}" i
  case "$seconds" in
    '' | *[!0-9]*) say "PREDIGEST_KAFKA_STOP_SECONDS=$seconds is not whole seconds: 30 s used"; seconds=30 ;;
  esac
  kill -TERM "$1" 2>/dev/null || true
  for ((i = 0; i < seconds * 2; i++)); do ours "$1" "$2" || break; sleep 0.5; done
  if ours "$1" "$2" && kill -KILL "$1" 2>/dev/null; then
    say "the broker (pid $1) was still running ${seconds} s after SIGTERM: killed (its data stays in $2)"
  fi
}

status() {  # exits 1 unless the broker runs and answers
  local data="${1:-$CACHE/run}"
  [ -d "$data" ] && data="$(cd "$data" && pwd -P)" && serving "$data" && cat "$data/bootstrap"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  status) status "${2:-}" ;;
  *) echo "usage: $0 fetch | start [DATA_DIR] | stop [DATA_DIR] | status [DATA_DIR]" >&2; exit 2 ;;
esac
