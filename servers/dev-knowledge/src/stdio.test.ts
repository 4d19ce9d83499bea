import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { issueToken } from '@bulkhead/core/operator';
import { issueTestToken } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestFolder } from '@bulkhead/domain';
import { devKnowledgeServer } from './server.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const main = fileURLToPath(new URL('./main.ts', import.meta.url));

let db: TestDatabase;
let roleUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  roleUrl = (await db.as('dev-knowledge')).url;
  await ingestFolder(db.sql, fileURLToPath(new URL('../../../docs/handbook', import.meta.url)));
});
afterAll(async () => {
  await db.drop();
});

/** The environment of a stdio server started by a desktop client: only what it is given. */
function serverEnv(token: string | undefined): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: roleUrl,
    BULKHEAD_MIGRATE: 'false',
    ...(token ? { BULKHEAD_TOKEN: token } : {}),
  };
}

/** Starts the server with `--stdio` and waits for it to exit on its own. */
function runRefused(
  token: string | undefined,
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', main, '--stdio'], {
      cwd: root,
      env: serverEnv(token),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

describe('dev-knowledge over stdio', () => {
  it('serves a real client: lists the tools and searches', async () => {
    const token = await issueTestToken(db.sql, devKnowledgeServer, { label: 'stdio client' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', main, '--stdio'],
      cwd: root,
      env: serverEnv(token),
      stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['search_docs', 'get_doc', 'list_docs']);
      const result = await client.callTool({
        name: 'search_docs',
        arguments: { query: 'rotate leaked token', limit: 1 },
      });
      expect(result.structuredContent).toMatchObject({
        hits: [
          {
            doc_id: 'runbook-rotate-a-leaked-token',
            title: {
              text: 'Rotate a leaked access token',
              source: 'document runbook-rotate-a-leaked-token title',
              untrusted: true,
            },
          },
        ],
        count: 1,
        truncated: true,
      });
    } finally {
      await client.close();
    }
    const [event] = await db.sql`
      select tool, outcome, token_label from audit_events where server = 'dev-knowledge' and tool = 'search_docs'`;
    expect(event).toEqual({ tool: 'search_docs', outcome: 'ok', token_label: 'stdio client' });
  });

  it('exits 1 with a one-line reason when BULKHEAD_TOKEN is missing', async () => {
    const run = await runRefused(undefined);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'dev-knowledge: BULKHEAD_TOKEN is not set: issue one with `pnpm bulkhead tokens issue --server dev-knowledge --label <who>`\n',
    );
  });

  it('exits 1 with a one-line reason for a token of another server', async () => {
    const { token } = await issueToken(db.sql, {
      server: 'admin',
      label: 'an admin client',
      scopes: ['customers:read'],
      expiresAt: null,
      createdBy: 'test',
    });
    const run = await runRefused(token);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'dev-knowledge: BULKHEAD_TOKEN was issued for another server; this server is dev-knowledge\n',
    );
  });
});
