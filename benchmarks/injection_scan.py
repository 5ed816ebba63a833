"""Cost of the step-text rule evaluator_injection_suspected per step, on the golden steps."""

import time
from pathlib import Path

from liveguard.readers.jsonl import read_jsonl
from liveguard.rules.injection import EvaluatorInjection

steps=[s for f in sorted(Path("golden_datasets").glob("*.jsonl")) for r in read_jsonl(f) if hasattr(r,"steps") for s in r.steps]
rule=EvaluatorInjection()
n=0; t=time.perf_counter()
for _ in range(50):
    for i,s in enumerate(steps):
        rule.check(i,s); n+=1
dt=time.perf_counter()-t
print(f"{len(steps)} golden steps x50: {dt/n*1e6:.1f} us/step")
