#!/bin/sh
# End-to-end `flowsched simulate` runs (ctest sim.simulate_e2e, label
# integration; tools/sim/CMakeLists.txt): a small synthetic cluster, the tiny
# Google-format trace and a generated openb trace, Quincy plus one baseline.
# Asserts outcomes: exit 0, every CSV and the plot script exist, no task left
# unplaced, one latency row per placed task, no machine over capacity, no
# placement below the locality floor.
set -eu
flowsched=$1
data=$2
out=$3
rm -rf "$out"

check() {  # dir scheduler-stem...
  dir=$1; shift
  test -s "$dir/summary.csv"
  test -s "$dir/plots.gp"
  for stem in "$@"; do
    for f in latency latency_cdf rounds; do
      test -s "$dir/${stem}_$f.csv" || { echo "missing $dir/${stem}_$f.csv"; exit 1; }
    done
    row=$(grep "^$(echo "$stem" | sed 's/-/[-:=]/g')," "$dir/summary.csv")
    placed=$(echo "$row" | cut -d, -f3)
    unplaced=$(echo "$row" | cut -d, -f4)
    rows=$(($(wc -l < "$dir/${stem}_latency.csv") - 1))
    [ "$unplaced" = 0 ] || { echo "$stem: $unplaced tasks unplaced"; exit 1; }
    [ "$rows" = "$placed" ] || { echo "$stem: $rows latency rows, $placed placed"; exit 1; }
    [ "$placed" -gt 0 ] || { echo "$stem: nothing placed"; exit 1; }
  done
  if grep -q "capacity violations" "$dir/stdout"; then
    grep "capacity violations" "$dir/stdout" | grep -q " 0 capacity violations" ||
      { echo "capacity violated"; exit 1; }
  fi
}

mkdir -p "$out/synthetic" "$out/trace"
"$flowsched" simulate --machines 150 --slots-per-machine 8 --utilisation 0.6 \
  --speedup 300 --duration 20 --policy quincy-qfp --baselines greedy \
  --seed 5 --export-rounds 2 --locality-floor --out "$out/synthetic" \
  > "$out/synthetic/stdout"
check "$out/synthetic" flow-quincy-qfp greedy
# No scheduler's time-0 placement reads less across racks than the floor.
floor=$(sed -n 's/^locality floor: .* reads is \([0-9.]*\)%.*/\1/p' "$out/synthetic/stdout")
[ -n "$floor" ] || { echo "no locality floor printed"; exit 1; }
for s in flow:quincy-qfp greedy; do
  got=$(sed -n "s/^$s: time-0 population as placed by the warm-up: \([0-9.]*\)%.*/\1/p" \
        "$out/synthetic/stdout")
  awk -v g="$got" -v f="$floor" 'BEGIN { exit !(g != "" && g + 0.05 >= f && f > 0) }' ||
    { echo "$s: time-0 cross-rack '$got'% below the floor $floor%"; exit 1; }
done

# The exported round networks replay through `flowsched solve` and
# `bench solver --dimacs`, whose exit 0 means every flowsched solve was
# certified optimal and matched LEMON's cost.
for k in 1 2; do
  net="$out/synthetic/networks/round-$k.dimacs"
  test -s "$net" || { echo "missing $net"; exit 1; }
  "$flowsched" solve "$net" | grep -q "^cost=-\{0,1\}[0-9]* algorithm=" ||
    { echo "flowsched solve $net failed"; exit 1; }
done
test ! -e "$out/synthetic/networks/round-3.dimacs"
"$flowsched" bench solver --dimacs "$out/synthetic/networks/round-2.dimacs" \
  --algorithm relaxation,cost_scaling --repeat 1 --csv "$out/dimacs.csv" \
  > "$out/dimacs.txt" 2>&1 || { cat "$out/dimacs.txt"; exit 1; }
[ "$(grep -c '^round-2.dimacs,dimacs,.*,ok,' "$out/dimacs.csv")" = 4 ] ||
  { cat "$out/dimacs.csv"; exit 1; }

# With CPU and memory the floor relaxes each resource in turn (tasks may
# split over racks): the locality profile's and greedy's warm-ups read no
# less across racks than it.
mkdir -p "$out/cpu-mem"
"$flowsched" simulate --machines 150 --model cpu-mem --utilisation 0.6 \
  --speedup 300 --duration 20 --policy profile:locality=5000 \
  --baselines greedy --seed 5 --locality-floor --out "$out/cpu-mem" \
  > "$out/cpu-mem/stdout"
check "$out/cpu-mem" flow-profile-locality-5000 greedy
floor=$(sed -n "s/^locality floor: .* fit the racks' \(CPU\|memory\); .* reads is at least \([0-9.]*\)%.*/\2/p" \
        "$out/cpu-mem/stdout")
[ -n "$floor" ] || { echo "no CPU or memory locality floor printed"; exit 1; }
for s in flow:profile:locality=5000 greedy; do
  got=$(sed -n "s/^$s: time-0 population as placed by the warm-up: \([0-9.]*\)%.*/\1/p" \
        "$out/cpu-mem/stdout")
  awk -v g="$got" -v f="$floor" 'BEGIN { exit !(g != "" && g + 0.05 >= f && f > 0) }' ||
    { echo "$s: time-0 cross-rack '$got'% below the floor $floor%"; exit 1; }
done

"$flowsched" simulate --trace-machines "$data/machine_events.csv" \
  --trace-tasks "$data/task_events.csv" --duration 0 --policy quincy-qfp \
  --baselines greedy --out "$out/trace" > "$out/trace/stdout"
check "$out/trace" flow-quincy-qfp greedy
grep -q "^flow:quincy-qfp,[0-9]*,8,0," "$out/trace/summary.csv"

# A bad line with --bad-lines fail is a clear error, not a crash.
printf '0,1,0,p,0.5,0.5\n0,x,0,p,0.5,0.5\n' > "$out/bad_machines.csv"
if "$flowsched" simulate --trace-machines "$out/bad_machines.csv" \
     --trace-tasks "$data/task_events.csv" --bad-lines fail \
     --out "$out/bad" 2> "$out/bad.err"; then
  echo "a bad line did not fail"; exit 1
fi
grep -q "bad_machines.csv:2: bad machine ID" "$out/bad.err"
# The openb trace's format (generated here: six nodes in racks of two,
# thirteen pods, one never scheduled, one asking for a GPU): CPU and memory
# tasks placed by Quincy and greedy, the dropped pod and the GPU ask
# reported; the node list alone is a clear error.
mkdir -p "$out/openb"
printf 'sn,cpu_milli,memory_mib,gpu,model\n' > "$out/openb/nodes.csv"
for n in 0 1 2 3 4 5; do
  printf 'node-%d,%d,65536,0,\n' "$n" $((8000 + 8000 * (n % 2))) >> "$out/openb/nodes.csv"
done
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n' \
  > "$out/openb/pods.csv"
for p in 0 1 2 3 4 5 6 7 8 9 10; do
  printf 'pod-%d,%d,4096,0,0,,LS,Running,%d,%d,%d\n' "$p" $((1000 + 500 * p)) \
    $((10 * p)) $((10 * p + 100)) $((10 * p)) >> "$out/openb/pods.csv"
done
printf 'pod-gpu,2000,4096,1,500,,LS,Running,5,50,5\n' >> "$out/openb/pods.csv"
printf 'pod-pending,2000,4096,0,0,,BE,Pending,7,9,\n' >> "$out/openb/pods.csv"
"$flowsched" simulate --openb-nodes "$out/openb/nodes.csv" \
  --openb-pods "$out/openb/pods.csv" --model cpu-mem --machines-per-rack 2 \
  --speedup 10 --policy quincy-qfp --baselines greedy --out "$out/openb" \
  > "$out/openb/stdout" 2> "$out/openb/stderr" || { cat "$out/openb/stderr"; exit 1; }
check "$out/openb" flow-quincy-qfp greedy
grep -q "^flow:quincy-qfp,[0-9]*,11,0," "$out/openb/summary.csv"
grep -q "^greedy,[0-9]*,11,0," "$out/openb/summary.csv"
grep -q "workload: 6 machines, 12 tasks (1 present at time 0, 11 arriving)" \
  "$out/openb/stderr"
grep -q "openb trace: 6 nodes, 13 pods, 1 never scheduled (dropped), 1 GPU asks left out" \
  "$out/openb/stderr"
if "$flowsched" simulate --openb-nodes "$out/openb/nodes.csv" \
     --out "$out/openb-bad" 2> "$out/openb-bad.err"; then
  echo "--openb-nodes alone did not fail"; exit 1
fi
grep -q "openb-nodes and --openb-pods go together" "$out/openb-bad.err"
echo "simulate e2e: ok"
