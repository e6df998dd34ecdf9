import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestProject } from '../helpers/service.js';

describe('projects and owner authentication', () => {
  let svc: TestService;
  let mine: TestProject;
  let theirs: TestProject;

  beforeAll(async () => {
    svc = await startTestService();
    mine = await svc.project('free');
    theirs = await svc.project('pro');
  });
  afterAll(async () => svc?.stop());

  it('answers 401 without a token and with a bad one', async () => {
    for (const token of [null, 'own_not-a-real-token-at-all']) {
      const r = await svc.api(token, 'GET', `/v1/projects/${mine.ref}`);
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('unauthorized');
    }
  });

  it("answers 404 project_not_found for another owner's project, as for a missing one", async () => {
    const other = await svc.api(mine.ownerToken, 'GET', `/v1/projects/${theirs.ref}`);
    const missing = await svc.api(mine.ownerToken, 'GET', '/v1/projects/no-such-project');
    expect(other.status).toBe(404);
    expect(other.body).toEqual(missing.body);
    expect(other.body.code).toBe('project_not_found');
  });

  it('shows the owner their project and lists only theirs', async () => {
    const r = await svc.api(mine.ownerToken, 'GET', `/v1/projects/${mine.ref}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ref: mine.ref, plan: 'free', features: [], project_url: mine.projectUrl });
    const list = await svc.api(mine.ownerToken, 'GET', '/v1/projects');
    expect(list.body.map((p: { ref: string }) => p.ref)).toEqual([mine.ref]);
  });

  it('serves the OpenAPI document', async () => {
    const r = await svc.api(null, 'GET', '/openapi.json');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/projects',
        '/v1/projects/{ref}',
        '/v1/projects/{ref}/outbox/enable',
        '/v1/projects/{ref}/webhooks',
        '/v1/projects/{ref}/webhooks/{id}',
        '/v1/projects/{ref}/secrets',
        '/v1/projects/{ref}/secrets/{name}',
        '/v1/projects/{ref}/smtp',
        '/v1/projects/{ref}/audit',
      ]),
    );
    expect(Object.keys(r.body.paths['/v1/projects/{ref}/webhooks/{id}'])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']));
    expect(r.body.paths['/v1/projects/{ref}/webhooks'].post.responses['201'].content['application/json'].schema.properties).toHaveProperty('signing_secret');
  });
});
