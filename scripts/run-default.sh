#!/bin/sh
# run-default.sh MODEL: the main job. Generates the loop kernel of MODEL, compiles it with nvcc and,
# on a machine with a GPU, runs it with --check and --bench; without a GPU it reports the schedule
# and the predicted latency and says that nothing ran.
set -eu
model=${1:-models/mlp8.cfg}
B=${B:-build}
NVCC=${NVCC:-nvcc}
name=$(basename "$model" .cfg)
mkdir -p "$B/gen"
echo "== arkgen $model -o $B/gen/$name.cu"
"$B/arkgen" "$model" -o "$B/gen/$name.cu"
echo "== nvcc \$(arkgen --nvcc-flags) $B/gen/$name.cu -o $B/gen/$name"
# shellcheck disable=SC2046
"$NVCC" $("$B/arkgen" --nvcc-flags) "$B/gen/$name.cu" -o "$B/gen/$name"
echo "== $B/gen/$name --check"
set +e
"$B/gen/$name" --check
rc=$?
set -e
if [ $rc -eq 77 ]; then
	echo "== no GPU here: generated and compiled; the prediction above is all there is to report"
	exit 0
fi
[ $rc -eq 0 ] || exit $rc
echo "== $B/gen/$name --bench 1000"
"$B/gen/$name" --bench 1000
