#!/usr/bin/env bash
# Fuzzes every parser of untrusted input briefly, on the stable toolchain.
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 20); TARGETs default to every fuzz/fuzz_targets/*.rs. Installs
# cargo-fuzz if it is missing, builds the targets once, then runs them FUZZ_JOBS at a time
# (default: the number of cores), each from fuzz/seeds/<target>/ plus what earlier runs left
# in fuzz/corpus/<target>/. Exits 1 when any target finds a crash, a timeout or an
# out-of-memory input, after copying each such input to tests/fuzz_regressions/<target>/,
# where `cargo test --test fuzz_regressions` replays it through the same properties
# (fuzz/props.rs). Fix the bug, keep the input there, commit both.
#
# Stable only: `--sanitizer none` needs no -Z flag (no AddressSanitizer, which Rust's own
# checks make less needed in a crate that forbids unsafe code), and `--dev` builds with the
# fuzz package's dev profile (opt-level 1, debug assertions and overflow checks on).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
secs=${1:-20}
shift $(( $# > 0 ? 1 : 0 ))
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
started=$SECONDS

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
cargo fuzz --version

echo "== build (${#targets[@]} targets)"
cargo fuzz build --dev --sanitizer none
echo "   built in $((SECONDS - started)) s"

# One target: fuzz for $secs seconds; the exit status says whether it found anything.
fuzz_one() {
  local t=$1 log=fuzz/target/logs/$1.log art=fuzz/artifacts/$1/
  rm -rf "$art"
  mkdir -p "fuzz/corpus/$t" "$art" fuzz/target/logs
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: 2 GiB is a blow-up.
  if cargo fuzz run --dev --sanitizer none "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -dict=fuzz/json.dict -artifact_prefix="$art" -print_final_stats=1 \
      >"$log" 2>&1; then
    echo "   $t: ok, $(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?') runs, corpus $(find "fuzz/corpus/$t" -type f | wc -l)"
    return 0
  fi
  echo "   $t: FAILED (log: $log)"
  grep -E "panicked at|ERROR: libFuzzer|SUMMARY|Test unit written" "$log" | head -8 | sed 's/^/      /'
  return 1
}

echo "== fuzz, ${secs} s per target, ${jobs} at a time"
failed=()
pids=()
names=()
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  pids+=($!)
  names+=("$t")
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || failed+=("${names[0]}")
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done

status=0
for t in "${failed[@]+"${failed[@]}"}"; do
  status=1
  mkdir -p "tests/fuzz_regressions/$t"
  for f in fuzz/artifacts/"$t"/crash-* fuzz/artifacts/"$t"/timeout-* fuzz/artifacts/"$t"/oom-*; do
    [ -f "$f" ] || continue
    cp "$f" "tests/fuzz_regressions/$t/"
    echo "   copied $f -> tests/fuzz_regressions/$t/$(basename "$f")"
  done
done
echo "== done in $((SECONDS - started)) s"
if [ "$status" -ne 0 ]; then
  echo "FUZZ FAILED: ${failed[*]}. Replay with: cargo test --test fuzz_regressions"
  echo "(minimise an input with: cargo fuzz tmin --dev --sanitizer none TARGET FILE)"
fi
exit "$status"
