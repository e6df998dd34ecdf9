// What `npm start` runs, read from package.json so there is one place that says it: its node flags
// (the heap cap, the single-threaded collector, source maps) and its entry point. The benchmark
// starts the service with both; the tests that spawn the service as a separate process (a
// dispatcher to kill, a second one to join) run it with the same flags through tsx, so they run
// under the memory cap production has.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../config.js';

/**
 * `exec node --max-old-space-size=256 --single-threaded-gc --enable-source-maps dist/src/main.js`
 * → those three flags, and dist/src/main.js.
 */
export function startScript(): { flags: string[]; entry: string } {
  const start: string = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).scripts.start;
  const words = start.split(/\s+/).filter(Boolean);
  const node = words.indexOf('node');
  const flags: string[] = [];
  for (let i = node + 1; i < words.length; i++) {
    if (words[i] === '--import' || words[i] === '--require') { flags.push(words[i], words[++i]); continue; }
    if (words[i].startsWith('--')) { flags.push(words[i]); continue; }
    return { flags, entry: words[i] };
  }
  throw new Error(`package.json's start script names no entry point: ${start}`);
}
