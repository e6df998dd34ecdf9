// The operator command (npm run admin) changes projects outside the Management API; those changes
// are in the project's audit trail too, naming the operator. Runs the real CLI as a child process
// against this file's control database.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../src/config.js';
import { dbUrl, stack, uniqueName } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

describe('audit of operator commands', () => {
  let svc: TestService;
  let project: TestProject;

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise');
  });
  afterAll(async () => {
    await svc?.stop();
  });

  function admin(...args: string[]): Promise<{ code: number | null; out: any; stderr: string }> {
    const s = stack();
    const env = {
      ...process.env,
      APP_ENV: 'test',
      LOG_LEVEL: 'error',
      DATABASE_URL: dbUrl(svc.controlDb),
      KAFKA_BROKERS: s.kafkaBrokers.join(','),
      KAFKA_CONNECT_URL: s.connectUrl,
      TOPIC_PREFIX: svc.cfg.TOPIC_PREFIX,
      ADMIN_OPERATOR: 'ops@ticket-4711',
    };
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', ...args], { cwd: repoRoot, env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => {
        const last = stdout.trim().split('\n').pop() ?? '';
        let out: unknown = last;
        try {
          out = JSON.parse(last);
        } catch {}
        resolve({ code, out, stderr });
      });
    });
  }

  const audit = async (token: string, ref: string) => (await svc.api(token, 'GET', `/v1/projects/${ref}/audit`)).body as any[];

  it('records set-plan with the operator, the old and the new plan', async () => {
    const r = await admin('set-plan', '--ref', project.ref, '--plan', 'pro');
    expect(r.code, r.stderr).toBe(0);
    expect(r.out).toEqual({ ref: project.ref, plan: 'pro' });
    const [entry] = await audit(project.ownerToken, project.ref);
    expect(entry).toMatchObject({
      action: 'project.set_plan',
      resource_type: 'project',
      resource_id: project.ref,
      details: { from: 'enterprise', to: 'pro' },
      actor: { owner_id: null, token_id: null, operator: 'ops@ticket-4711' },
    });
  }, 60_000);

  it('records create-project on the new project, and nothing for a refused command', async () => {
    const ref = uniqueName('cli');
    const r = await admin('create-project', '--ref', ref, '--plan', 'free');
    expect(r.code, r.stderr).toBe(0);
    const entries = await audit(r.out.owner_token, ref);
    expect(entries.map((e) => e.action)).toEqual(['project.create']);
    expect(entries[0]).toMatchObject({ resource_id: ref, details: { plan: 'free', managed_database: true }, actor: { operator: 'ops@ticket-4711' } });

    const refused = await admin('set-plan', '--ref', ref, '--plan', 'platinum');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/--plan must be one of/);
    expect((await audit(r.out.owner_token, ref)).map((e) => e.action)).toEqual(['project.create']);
  }, 60_000);
});
