import type { AuditEventInput } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer } from '../../serve/create-server.ts';
import { callTool } from './call-tool.ts';
import { defineTool, READ_ONLY } from '../tool-definition/define-tool.ts';
import { createRequestAudit, type EventSink } from '../observability/request-audit.ts';

const def = createServer({
  name: 'pipeline-test',
  version: '1.0.0',
  description: 'A server for the call pipeline test.',
  tools: [
    defineTool({
      name: 'echo_text',
      title: 'Echo text',
      description: 'Returns the text it was given.',
      scope: 'echo:read',
      input: z.object({ text: z.string().max(100) }),
      annotations: READ_ONLY,
      handler: async ({ text }) => ({ text }),
    }),
  ],
});

/** A sink that records what it is asked to write, and a database that must never be reached. */
function recording() {
  const written: AuditEventInput[] = [];
  const sink: EventSink = {
    append: async (e) => {
      written.push(e);
      return e as never;
    },
    appendIn: async (_tx, e) => {
      written.push(e);
      return e as never;
    },
    keep: async (e) => {
      written.push(e);
    },
  };
  const sql = new Proxy(
    {},
    {
      get: () => {
        throw new Error('the database is not reached here');
      },
    },
  ) as Sql;
  const kit = {
    server: def.name,
    catalog: def.catalog,
    sql,
    logger: pino({ level: 'silent' }),
    audit: sink as never,
    auditFullResults: false,
  };
  return { written, kit, audit: createRequestAudit(sink, 'req-1', { server: def.name }) };
}

const access = { tokenId: 't-1', label: 'test', scopes: ['echo:read'], customerId: null } as never;

describe('callTool: one event, whatever happens before the call runs', () => {
  it('answers arguments it cannot even read with an internal error and writes its one event', async () => {
    const { written, kit, audit } = recording();
    // Arguments whose keys cannot be listed: reading them throws before the call has its record.
    const hostile = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('boom');
        },
      },
    );
    const outcome = await callTool(kit, { name: 'echo_text', arguments: hostile, access, audit });
    expect(outcome.kind).toBe('answered');
    expect(outcome.result.isError).toBe(true);
    expect(JSON.stringify(outcome.result.content)).toMatch(/Internal error, incident [0-9a-f]{8}/);
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({
      outcome: 'internal_error',
      tool: 'echo_text',
      requestId: 'req-1',
      arguments: null,
    });
    expect(audit.events).toBe(1);
  });

  it('refuses invalid arguments with one event and never reaches the database', async () => {
    const { written, kit, audit } = recording();
    const outcome = await callTool(kit, { name: 'echo_text', arguments: { text: 5 }, access, audit });
    expect(outcome.result.isError).toBe(true);
    expect(written.map((e) => e.outcome)).toEqual(['invalid_arguments']);
  });
});
