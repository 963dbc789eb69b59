set -u
nproc > $OUT/nproc.txt
run() {  # tree config jobs tag
  local root=$(cd $1 && pwd) d=$(mktemp -d)
  local s=$(date +%s.%N)
  (cd $d && PYTHONPATH=$root python -m precision.runner.cli run $2 --jobs $3 --no-plots --quiet > /dev/null 2>>$OUT/errors.txt)
  local e=$(date +%s.%N)
  echo "$4 jobs $3 tree $(basename $root): $(python -c "print(round($e-$s,2))") s" | tee -a $OUT/times.txt
  python - "$d" "$4" <<'PY' >> $OUT/times.txt
import sys, glob, pandas as pd, os
t = pd.read_parquet(glob.glob(sys.argv[1] + "/results/*/results.parquet")[0])
t = t.sort_values(["point_id", "repeat"]).reset_index(drop=True)
key = os.environ["OUT"] + "/ref_" + sys.argv[2] + ".pkl"
cols = ["point_id", "repeat", "err_fro", "err_max", "err_median"]
if os.path.exists(key):
    print("   errors equal to the first run of this config:", t[cols].equals(pd.read_pickle(key)[cols]))
else:
    t[cols].to_pickle(key)
PY
  rm -rf $d
}
here=$(pwd)
for r in 1 2; do
  for jobs in 4 16; do for tree in bench_trees/base bench_trees/static .; do run $tree $here/$tree/configs/quickstart.toml $jobs quickstart; done; done
  for tree in bench_trees/base bench_trees/static .; do run $tree $here/bench_trees/heavy.toml 16 heavy; done
done
rm -f $OUT/ref_*.pkl
