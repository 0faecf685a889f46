#!/usr/bin/env bash
# Run the p4cache PTF suite against a switch on veth pairs.
#
#   ptf-tests/run.sh [softnic|xdp|bmv2] [PTF test names or groups...]
#   make ptf [TARGET=softnic|xdp|bmv2] [PTF_ARGS="hits updates.StaleUpdateIgnored"]
#
# Steps: compile p4src/v1model/p4cache.p4 (p4cache.program.build: softnic compile, or
# p4c-bm2-ss for bmv2); create one veth pair per switch port in the root namespace (IPv6 and
# offloads off, so only the tests' frames appear); start `softnic run --no-p4` (xdp: with
# `--engine xdp`, the program in the kernel on the switch ends; or
# `simple_switch_grpc --no-p4`) on one end of each pair with a P4Runtime server on a free
# loopback port; run `ptf --test-dir ptf-tests/tests` on the other ends (the tests push the
# pipeline themselves); tear everything down on any exit; exit with ptf's status.
#
# Environment: PY (Python of the venv, default .venv/bin/python), P4CACHE_JSON and
# P4CACHE_P4INFO (test a prebuilt program instead of building p4src), P4CACHE_BUILD_DIR (where
# p4cache.program builds it; default build/), PTF_LOG_DIR (default
# build/ptf), KEEP_LOGS=1 (print the switch log even when the tests pass), PTF_TEST_DIR (run the
# tests of another directory with the same set-up; default ptf-tests/tests).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET=${1:-softnic}
[ $# -gt 0 ] && shift
PY=${PY:-$ROOT/.venv/bin/python}
VENV_BIN=$(dirname "$PY")
NPORTS=3
LOG_DIR=${PTF_LOG_DIR:-$ROOT/build/ptf}

skip() { echo "ptf: SKIPPED ($TARGET): $*"; exit 0; }
die() { echo "ptf: error: $*" >&2; exit 2; }

case "$TARGET" in
  softnic) SWITCH_BIN="$VENV_BIN/softnic"; COMPILER=softnic ;;
  xdp)
    SWITCH_BIN="$VENV_BIN/softnic"; COMPILER=softnic
    why=$("$PY" -c 'from softnic.runtime.xdp.libbpf import missing_requirements as m; print("; ".join(m()))' 2>&1) ||
      die "cannot ask the xdp engine what it needs: $why"
    [ -z "$why" ] || skip "the xdp engine cannot run here: $why" ;;
  bmv2)
    COMPILER=p4c-bm2-ss
    missing=""
    for tool in p4c-bm2-ss simple_switch_grpc; do
      command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
    done
    [ -z "$missing" ] || skip "not on PATH:$missing; the suite did not run against BMv2" \
      "(it needs p4c and BMv2 built with gRPC; the softnic run is: make ptf)"
    SWITCH_BIN=$(command -v simple_switch_grpc) ;;
  *) die "unknown TARGET '$TARGET' (softnic, xdp or bmv2)" ;;
esac
[ "$(id -u)" = 0 ] || skip "creating veth interfaces needs root (CAP_NET_ADMIN)"
for tool in ip ethtool memcached; do
  command -v "$tool" >/dev/null 2>&1 || skip "'$tool' is not installed (make setup installs it)"
done
[ -x "$PY" ] || die "$PY not found (run make setup)"
[ -x "$VENV_BIN/ptf" ] || die "$VENV_BIN/ptf not found (run make setup)"

# Interface names carry this shell's pid: ptf<pid>s<N> (switch side) and ptf<pid>t<N> (PTF side).
TAG="ptf$$"
SWITCH_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SWITCH_PID" ] && kill -0 "$SWITCH_PID" 2>/dev/null; then
    kill -TERM "$SWITCH_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$SWITCH_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SWITCH_PID" 2>/dev/null
    wait "$SWITCH_PID" 2>/dev/null
  fi
  for i in $(seq 0 $((NPORTS - 1))); do
    ip link del "${TAG}s$i" 2>/dev/null
  done
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Pairs left by an earlier run that was killed (its pid is gone).
for ifname in $(ip -o link show | sed -n 's/^[0-9]*: \(ptf[0-9]*s[0-9]*\)@.*/\1/p'); do
  pid=${ifname#ptf}; pid=${pid%s*}
  [ -d "/proc/$pid" ] || ip link del "$ifname" 2>/dev/null
done

mkdir -p "$LOG_DIR"

# 1. The program.
if [ -n "${P4CACHE_JSON:-}" ] || [ -n "${P4CACHE_P4INFO:-}" ]; then
  [ -f "${P4CACHE_JSON:-}" ] && [ -f "${P4CACHE_P4INFO:-}" ] ||
    die "set both P4CACHE_JSON and P4CACHE_P4INFO to existing files"
  JSON=$P4CACHE_JSON; P4INFO=$P4CACHE_P4INFO
else
  out=$("$PY" -c "from p4cache import program
p = program.build(compiler='$COMPILER')
print(p.json_path); print(p.p4info_path)") || die "building the P4 program failed"
  JSON=$(sed -n 1p <<<"$out"); P4INFO=$(sed -n 2p <<<"$out")
fi

# 2. The veth pairs.
SW_IFACES=(); PTF_IFACES=()
for i in $(seq 0 $((NPORTS - 1))); do
  s="${TAG}s$i"; t="${TAG}t$i"
  ip link add "$s" type veth peer name "$t" || die "cannot create veth pair $s/$t"
  for n in "$s" "$t"; do
    echo 1 > "/proc/sys/net/ipv6/conf/$n/disable_ipv6" 2>/dev/null
    ethtool -K "$n" tx off rx off tso off gso off gro off >/dev/null 2>&1
    ip link set "$n" up
  done
  # xdp: a veth hands redirected frames to a peer with NAPI on, which GRO turns on (docs/xdp.md)
  [ "$TARGET" = xdp ] && ethtool -K "$t" gro on >/dev/null 2>&1

  SW_IFACES+=(-i "$i@$s"); PTF_IFACES+=(--interface "$i@$t")
done

# 3. The switch, with its P4Runtime server on a free loopback port.
GRPC_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
GRPC_ADDR="127.0.0.1:$GRPC_PORT"
SWITCH_LOG="$LOG_DIR/switch-$TARGET.log"
if [ "$TARGET" = softnic ] || [ "$TARGET" = xdp ]; then
  ENGINE=(); [ "$TARGET" = xdp ] && ENGINE=(--engine xdp)
  "$SWITCH_BIN" run --no-p4 "${ENGINE[@]}" "${SW_IFACES[@]}" --cpu-port 255 \
    --grpc-server-addr "$GRPC_ADDR" >"$SWITCH_LOG" 2>&1 &
else
  THRIFT_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$SWITCH_BIN" --no-p4 "${SW_IFACES[@]}" --device-id 0 --thrift-port "$THRIFT_PORT" \
    -- --grpc-server-addr "$GRPC_ADDR" --cpu-port 255 >"$SWITCH_LOG" 2>&1 &
fi
SWITCH_PID=$!
"$PY" - "$GRPC_PORT" "$SWITCH_PID" <<'EOF' || { cat "$SWITCH_LOG"; die "the switch did not start"; }
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    if not os.path.exists(f"/proc/{pid}"):
        sys.exit(1)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF

# 4. The tests.
echo "ptf: $TARGET on ports ${SW_IFACES[*]}, P4Runtime $GRPC_ADDR, program $JSON"
"$VENV_BIN/ptf" --test-dir "${PTF_TEST_DIR:-$ROOT/ptf-tests/tests}" --pypath "$ROOT/ptf-tests/lib" \
  "${PTF_IFACES[@]}" --log-file "$LOG_DIR/ptf.log" --test-case-timeout 120 \
  --test-params "grpcaddr='$GRPC_ADDR';p4info='$P4INFO';config='$JSON';device_id=0;target='$TARGET'" \
  "$@"
rc=$?
if [ "$rc" != 0 ] || [ -n "${KEEP_LOGS:-}" ]; then
  echo "ptf: switch log ($SWITCH_LOG), last lines:"
  tail -n 30 "$SWITCH_LOG"
fi
exit "$rc"
