#!/bin/sh
# Smoke test for `flowsched bench solver --quick`: it must exit 0 and its
# CSV must hold an "ok" row for every case and algorithm it lists ("n/a"
# for the incremental solver on cases that are not sequences), and an
# unknown --algorithm must be refused up front with exit status 2. A small
# random family (--random) must report every network measured, and its
# --write-dimacs files must solve with `flowsched solve`.
# Usage: bench_smoke_test.sh FLOWSCHED_BINARY WORK_DIR
set -eu
flowsched=$1
dir=$2
mkdir -p "$dir"
csv="$dir/quick.csv"
rm -f "$csv"
"$flowsched" bench solver --quick --repeat 1 --csv "$csv" >"$dir/table.txt" 2>"$dir/progress.txt" || {
  echo "flowsched bench solver --quick failed:"; cat "$dir/table.txt" "$dir/progress.txt"; exit 1; }
"$flowsched" bench solver --quick --list >"$dir/list.txt"
missing=0
cases=$(sed -n 's/^case //p' "$dir/list.txt")
algorithms=$(sed -n 's/^algorithm //p' "$dir/list.txt")
[ -n "$cases" ] && [ -n "$algorithms" ] || { echo "empty --list output"; exit 1; }
for c in $cases; do
  for a in $algorithms; do
    if ! awk -F, -v c="$c" -v a="$a" '$1 == c && $10 == a && ($11 == "ok" || ($11 == "n/a" && (a == "incremental" || a == "warm_portfolio"))) { found = 1 } END { exit !found }' "$csv"; then
      echo "no ok CSV row for case $c algorithm $a"; missing=1
    fi
  done
done
[ "$missing" -eq 0 ] || { cat "$csv"; exit 1; }
status=0
"$flowsched" bench solver --quick --algorithm no_such_solver >/dev/null 2>"$dir/bad.txt" || status=$?
[ "$status" -eq 2 ] && grep -q "unknown algorithm 'no_such_solver'" "$dir/bad.txt" || {
  echo "an unknown --algorithm exited $status:"; cat "$dir/bad.txt"; exit 1; }
random="$dir/random.txt"
"$flowsched" bench solver --random 4 --random-min-machines 20 --random-max-machines 80 \
  --repeat 1 --algorithm portfolio,incremental >"$random" 2>"$dir/random-progress.txt" || {
  echo "bench solver --random failed:"; cat "$random" "$dir/random-progress.txt"; exit 1; }
for a in portfolio incremental; do
  grep -Eq "^   $a +4 " "$random" || {
    echo "no ratio row with 4 measured networks for $a:"; cat "$random"; exit 1; }
done
mkdir -p "$dir/dimacs"
rm -f "$dir/dimacs/"*.min
"$flowsched" bench solver --random 4 --random-min-machines 20 --random-max-machines 80 \
  --write-dimacs "$dir/dimacs" >"$dir/written.txt"
[ "$(wc -l <"$dir/written.txt")" -eq 4 ] || { echo "--write-dimacs wrote:"; cat "$dir/written.txt"; exit 1; }
for f in "$dir/dimacs/"*.min; do
  "$flowsched" solve "$f" | grep -q '^cost=' || { echo "flowsched solve $f failed"; exit 1; }
done
echo "bench smoke: $(($(wc -l <"$csv") - 1)) rows OK, random family OK"
