#!/bin/sh
# Lays OpenDC's sources (the modules its experiment runner needs) out as one Maven source set under
# build/src, from a local git copy of atlarge-research/opendc (a bare mirror or a clone).
#   extract.sh GIT_DIR [COMMIT]
# Nothing of OpenDC's is committed here: build/ is ignored by git.
set -eu
GIT_DIR=${1:?usage: extract.sh GIT_DIR [COMMIT]}
COMMIT=${2:-HEAD}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$HERE/build/src
MODULES="opendc-common
opendc-simulator/opendc-simulator-core
opendc-simulator/opendc-simulator-flow
opendc-simulator/opendc-simulator-compute
opendc-compute/opendc-compute-api
opendc-compute/opendc-compute-simulator
opendc-compute/opendc-compute-topology
opendc-compute/opendc-compute-workload
opendc-compute/opendc-compute-carbon
opendc-compute/opendc-compute-failure
opendc-trace/opendc-trace-api
opendc-trace/opendc-trace-parquet
opendc-experiments/opendc-experiments-base"
BENCH=opendc-experiments/opendc-experiments-base/src/jmh/resources
# OpenDC's jmh resources the runs need, laid out as in OpenDC's module folder (CI runs the benchmark from
# there and the experiment files name their topology and trace relative to it): the CI experiment surf_week
# and the task-scaling experiment 1K_tasks. surf_month and surf_halfyear are named in the tree but their
# fragment files are not in the stored snapshot, so they are not taken.
RESOURCES="$BENCH/experiments/workloadScaling/surf_week.json
$BENCH/topologies/workloadScaling/surf.json
$BENCH/workloadTraces/workloadScaling/surf_week
$BENCH/experiments/taskScaling/experiment_1K.json
$BENCH/topologies/taskScaling/topology_100.json
$BENCH/workloadTraces/taskScaling/1K_tasks
opendc-experiments/opendc-experiments-base/src/jmh/kotlin/org/opendc/experiments/CIBenchmark.kt"
rm -rf "$HERE/build/src" "$HERE/build/tree" "$HERE/build/ci-run"
mkdir -p "$HERE/build/tree" "$OUT/main/kotlin" "$OUT/main/java" "$OUT/main/resources" "$HERE/build/ci-run"
PATHS=""
for m in $MODULES; do PATHS="$PATHS $m/src/main"; done
# (git archive may print "invalid object" for large files of the snapshot that are not stored, such as the
#  1M_tasks trace, even though none is asked for here; its exit status and tar's are what count.)
# shellcheck disable=SC2086
git --git-dir="$GIT_DIR" archive "$COMMIT" $PATHS $RESOURCES | tar -x -C "$HERE/build/tree"
for m in $MODULES; do
    for kind in kotlin java resources; do
        if [ -d "$HERE/build/tree/$m/src/main/$kind" ]; then
            cp -R "$HERE/build/tree/$m/src/main/$kind/." "$OUT/main/$kind/"
        fi
    done
done
# Two modules ship a log4j2.xml; the experiment runner's (copied last above) is the one on its class path.
mkdir -p "$HERE/build/ci-run/src/jmh"
cp -R "$HERE/build/tree/$BENCH" "$HERE/build/ci-run/src/jmh/"
git --git-dir="$GIT_DIR" rev-parse "$COMMIT" > "$HERE/build/src/COMMIT"
echo "OpenDC $(cat "$HERE/build/src/COMMIT"): $(find "$OUT/main/kotlin" -name '*.kt' | wc -l) Kotlin, $(find "$OUT/main/java" "$OUT/main/kotlin" -name '*.java' | wc -l) Java files in $OUT"
