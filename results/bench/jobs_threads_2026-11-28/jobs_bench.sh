set -u
nproc > $OUT/nproc.txt
for r in 1 2; do for jobs in 4 16; do for tree in basetree .; do
  d=$(mktemp -d); root=$(cd $tree && pwd)
  s=$(date +%s.%N)
  (cd $d && PYTHONPATH=$root python -m precision.runner.cli run $root/configs/quickstart.toml --jobs $jobs --no-plots --quiet > /dev/null 2>$OUT/err_${tree//\//}_$jobs.txt)
  e=$(date +%s.%N)
  echo "round $r jobs $jobs tree $tree: $(python -c "print(round($e-$s,2))") s" | tee -a $OUT/jobs_times.txt
  cp $d/results/quickstart/results.parquet $OUT/q_$(echo $tree | tr -d ./)_${jobs}_$r.parquet 2>/dev/null || true
  rm -rf $d
done; done; done
python - <<'PY' >> $OUT/jobs_times.txt
import pandas as pd, glob, os
out=os.environ["OUT"]
fs=sorted(glob.glob(out+"/q_*.parquet"))
ref=None
for f in fs:
    t=pd.read_parquet(f).sort_values(["point_id","repeat"]).reset_index(drop=True)[["point_id","repeat","err_fro","err_max","err_median"]]
    if ref is None: ref=t
    print(os.path.basename(f), "errors equal to first:", t.equals(ref))
PY
rm -f $OUT/q_*.parquet
