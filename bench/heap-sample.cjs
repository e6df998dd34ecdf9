// Preloaded into the service by `BENCH_HEAP_PROFILE=1` (node --require): V8's sampling heap
// profiler over the service's whole life, objects the collector freed included (the point is what
// is allocated a message, which is what the scavenges pay for, not what stays). Written at exit
// as BENCH_HEAP_SAMPLE_DIR/heap-<pid>.heapprofile (Chrome DevTools reads it; bench/profile.ts
// summarises it). An in-process inspector session answers synchronously, so 'exit' can write it.
'use strict';
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');
const path = require('node:path');

const dir = process.env.BENCH_HEAP_SAMPLE_DIR;
if (dir) {
  const session = new inspector.Session();
  session.connect();
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  process.on('exit', () => {
    session.post('HeapProfiler.stopSampling', (err, r) => {
      if (!err) writeFileSync(path.join(dir, `heap-${process.pid}.heapprofile`), JSON.stringify(r.profile));
    });
  });
}
