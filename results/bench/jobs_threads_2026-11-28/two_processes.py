import sys, time, numpy as np
from precision import mma
from precision.threads import limit_threads
if sys.argv[1] != "none": limit_threads(int(sys.argv[1]))
rng = np.random.default_rng(0)
A = rng.uniform(-1,1,(512,512)).astype(np.float16); B = rng.uniform(-1,1,(512,512)).astype(np.float16)
C = np.zeros((512,512), np.float32)
t=time.time()
for _ in range(10): mma(A, B, C)
print(round(time.time()-t,2))
