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
trap 'exit 130' INT

fetch() {
  if [ -f "$LIBS/.complete" ]; then return 0; fi
  say "fetching Apache Kafka $VERSION from Maven Central into $LIBS"
  mkdir -p "$LIBS"
  mvn -q -B -f "$HERE/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$LIBS" -DincludeScope=runtime >&2
  touch "$LIBS/.complete"
}

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

answers() {  # $1 = host:port; true when a Kafka ApiVersions round trip works
  python3 - "$1" <<'PY'
import socket, struct, sys
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
  say "kafka.pid named pid $2, which is not the broker of $1 (that broker exited): the stale file is removed"
  rm -f "$1/kafka.pid"
}

# With SO_REUSEADDR, as Kafka binds: the TIME_WAIT connections a stopped broker leaves on its port do not count
# as taken (without it a restart right after a stop formatted fresh storage), a live listener still does.
port_free() { python3 -c 'import socket,sys;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(("127.0.0.1",int(sys.argv[1])))' "$1" 2>/dev/null; }

launch() {  # $1 = data dir, $2 = port; starts the JVM and waits until it answers
  local data="$1" port="$2"
  # setsid: a Ctrl-C in the terminal that started it must not take the shared broker down with it.
  setsid nohup "$JAVA" "${OPTS[@]}" -cp "$LIBS/*" kafka.Kafka "$data/server.properties" >> "$data/kafka.log" 2>&1 &
  echo $! > "$data/kafka.pid"
  echo "127.0.0.1:$port" > "$data/bootstrap"
  for _ in $(seq 1 180); do
    if answers "127.0.0.1:$port"; then cat "$data/bootstrap"; return 0; fi
    if ! kill -0 "$(cat "$data/kafka.pid")" 2>/dev/null; then
      say "broker exited during start; last lines of $data/kafka.log:"; tail -20 "$data/kafka.log" >&2; return 1
    fi
    sleep 0.5
  done
  say "broker did not answer on 127.0.0.1:$port within 90 s; see $data/kafka.log"; return 1
}

start() {
  local data="${1:-$CACHE/run}"
  mkdir -p "$data"
  data="$(cd "$data" && pwd -P)"
  if serving "$data"; then cat "$data/bootstrap"; return 0; fi
  if [ -f "$data/kafka.pid" ]; then
    local pid; pid="$(cat "$data/kafka.pid")"
    # Still stopping (or starting): a second broker would find its ports taken and format the storage under it.
    if ours "$pid" "$data"; then
      say "the broker of $data (pid $pid) runs but does not answer (still starting or stopping): start it again once it has stopped"
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
  python3 -c 'import base64,uuid
while (i := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"): pass
print(i)'
}

stop() {
  local data="${1:-$CACHE/run}"
  [ -f "$data/kafka.pid" ] || return 0
  data="$(cd "$data" && pwd -P)"
  local pid; pid="$(cat "$data/kafka.pid")"
  local seconds="${PREDIGEST_KAFKA_STOP_SECONDS:-30}" i
  case "$seconds" in
    '' | *[!0-9]*) say "PREDIGEST_KAFKA_STOP_SECONDS=$seconds is not whole seconds: 30 s used"; seconds=30 ;;
  esac
  if ! ours "$pid" "$data"; then stale "$data" "$pid"; return 0; fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < seconds * 2; i++)); do ours "$pid" "$data" || break; sleep 0.5; done
  if ours "$pid" "$data" && kill -KILL "$pid" 2>/dev/null; then
    say "the broker (pid $pid) was still running ${seconds} s after SIGTERM: killed (its data stays in $data)"
  fi
  rm -f "$data/kafka.pid"
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
