import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer } from '../../../serve/create-server.ts';
import { defineTool } from '../define-tool.ts';
import { untrustedTextSchema } from '../../text-safety/untrusted/wrap.ts';
import { lintServer } from './lint-tools.ts';

const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

const listTickets = defineTool({
  name: 'list_tickets',
  title: 'List tickets',
  description:
    'Returns tickets, newest first, each with ticket_id, subject and status, plus truncated. ' +
    'status: open, waiting or closed (default open). limit: default 20, at most 100. Summaries only: get_ticket returns one ticket with its messages.',
  scope: 'tickets:read',
  input: z.object({
    status: z.enum(['open', 'waiting', 'closed']).default('open').describe('Which tickets (default open).'),
    limit: z.number().int().min(1).max(100).default(20).describe('How many (default 20, at most 100).'),
  }),
  output: z.object({
    tickets: z.array(z.object({ ticket_id: z.string(), subject: untrustedTextSchema, status: z.string() })),
    truncated: z.boolean(),
  }),
  annotations: ro,
  handler: async () => ({ tickets: [], truncated: false }),
});

const getTicket = defineTool({
  name: 'get_ticket',
  title: 'Get ticket',
  description:
    'Returns one ticket by ticket_id with subject, status and every message (author, sent_at, body). ' +
    'ticket_id: e.g. T-1001. One ticket only; list_tickets returns several.',
  scope: 'tickets:read',
  input: z.object({
    ticket_id: z
      .string()
      .regex(/^T-\d{4}$/)
      .describe('Ticket number, e.g. T-1001.'),
  }),
  annotations: ro,
  handler: async ({ ticket_id }) => ({ ticket_id }),
});

const answerTicket = defineTool({
  name: 'answer_ticket',
  title: 'Answer ticket',
  description:
    'Files an answer to ticket_id for a person to approve; returns pending_approval with approval_id. ' +
    'body: the answer the customer will read. Nothing is sent before approval; get_ticket shows the thread.',
  scope: 'tickets:write',
  input: z.object({
    ticket_id: z
      .string()
      .regex(/^T-\d{4}$/)
      .describe('Ticket number, e.g. T-1001.'),
    body: z.string().min(1).max(4000).describe('The answer, plain text.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  approval: { preview: ({ ticket_id }) => `Answer ${ticket_id}` },
  handler: async () => ({ sent: true }),
});

describe('lintServer', () => {
  it('passes a server whose zod-built tools are well described', () => {
    const def = createServer({
      name: 'helpdesk-test',
      version: '1.0.0',
      description: 'Tickets.',
      tools: [listTickets, getTicket],
    });
    const result = lintServer(def);
    expect(result.findings).toEqual([]);
    expect([result.modelBudgetChars, result.budgetChars]).toEqual([6000, undefined]);
  });

  it('measures the tools/list JSON in characters, tokens as characters / 4 rounded up', () => {
    const ping = defineTool({
      name: 'ping',
      title: 'Ping',
      description: 'Returns pong. No arguments; not a database check.',
      scope: 'ping:read',
      input: z.object({}),
      annotations: ro,
      handler: async () => ({ pong: true }),
    });
    const def = createServer({ name: 'ping-test', version: '1.0.0', description: 'Ping.', tools: [ping] });
    // What tools/list carries, counted by hand: 2 + 14 + 66 + 48 + 118 + 2 = 250 characters; the part a
    // model reads is name, description and input schema: 2 + 14 + 66 + 47 + 2 = 131 (no title: it is in
    // annotations, where clients find the display name).
    const toolsList =
      '[{' +
      '"name":"ping",' +
      '"description":"Returns pong. No arguments; not a database check.",' +
      '"inputSchema":{"type":"object","properties":{}},' +
      '"annotations":{"title":"Ping","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}' +
      '}]';
    expect(JSON.stringify(def.catalog.visible(def.catalog.scopes))).toBe(toolsList);
    expect(lintServer(def)).toEqual({
      findings: [],
      size: { chars: 250, tokens: 63, modelChars: 131, modelTokens: 33 },
      modelBudgetChars: 6000,
    });
  });

  it('fails a server over the budget of the part a model reads, and shows the whole list without budgeting it', () => {
    const def = createServer({
      name: 'helpdesk-test',
      version: '1.0.0',
      description: 'Tickets.',
      tools: [listTickets, getTicket],
      modelBudgetChars: 900,
    });
    const { findings, size, budgetChars } = lintServer(def);
    const n = (x: number) => x.toLocaleString('en-US');
    expect(findings).toEqual([
      {
        tool: null,
        rule: 'tools-budget',
        message: `the part of tools/list a model reads (name, title, description, inputSchema) is ${n(size.modelChars)} characters (~${n(size.modelTokens)} tokens), over the budget of 900`,
        path: 'tools',
      },
    ]);
    expect(budgetChars).toBeUndefined();
    expect(size.chars).toBe(JSON.stringify(def.catalog.visible(def.catalog.scopes)).length);
  });

  it('writes zod’s nullable fields and free-form objects in the portable form the Inspector accepts', () => {
    const findTicket = defineTool({
      name: 'find_ticket',
      title: 'Find ticket',
      description:
        'Returns the ticket whose subject matches subject, or null; closed_at is null while it is open. ' +
        'subject: words of the subject, or null for the newest. One ticket only; list_tickets returns several.',
      scope: 'tickets:read',
      input: z.object({ subject: z.string().max(200).nullable().describe('Words of the subject, or null.') }),
      output: z.object({
        ticket_id: z.string(),
        closed_at: z.string().nullable(),
        fields: z.looseObject({}),
        labels: z.record(z.string(), z.unknown()),
      }),
      annotations: ro,
      handler: async () => ({ ticket_id: 'T-1001', closed_at: null, fields: {}, labels: {} }),
    });
    const def = createServer({
      name: 'helpdesk-test',
      version: '1.0.0',
      description: 'Tickets.',
      tools: [listTickets, findTicket],
    });
    expect(lintServer(def).findings).toEqual([]);
    const listing = def.catalog.listings.get('find_ticket')!;
    expect(listing.inputSchema.properties).toEqual({
      subject: {
        anyOf: [{ type: 'string', maxLength: 200 }, { type: 'null' }],
        description: 'Words of the subject, or null.',
      },
    });
    expect(listing.outputSchema!.properties).toEqual({
      ticket_id: { type: 'string' },
      closed_at: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      fields: { type: 'object', properties: {}, additionalProperties: true },
      labels: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: true },
    });
  });

  it('leaves a bare z.unknown() for the linter to report (untyped-schema)', () => {
    const getThing = defineTool({
      name: 'get_thing',
      title: 'Get thing',
      description: 'Returns the thing as stored. No arguments; list_tickets returns tickets instead.',
      scope: 'things:read',
      input: z.object({}),
      output: z.object({ thing: z.unknown() }),
      annotations: ro,
      handler: async () => ({ thing: 1 }),
    });
    const def = createServer({ name: 'thing-test', version: '1.0.0', description: 'T.', tools: [getThing] });
    expect(lintServer(def).findings).toEqual([
      {
        tool: 'get_thing',
        rule: 'untyped-schema',
        message: 'the schema has no type nor any other validation keyword: it accepts any value',
        path: 'outputSchema.properties.thing',
      },
    ]);
  });

  it('knows which tools are gated: a gated tool that claims read-only is a finding', () => {
    // defineTool refuses this combination; a tool object built by hand reaches createServer without it.
    expect(() =>
      defineTool({ ...answerTicket, annotations: { ...answerTicket.annotations, readOnlyHint: true } }),
    ).toThrow('tool answer_ticket has a gate but says readOnlyHint');
    const handMade = { ...answerTicket, annotations: { ...answerTicket.annotations, readOnlyHint: true } };
    const def = createServer({
      name: 'helpdesk-test',
      version: '1.0.0',
      description: 'T.',
      tools: [getTicket, handMade],
    });
    // A gated server also gets the kit's get_approval_status; only this tool is under test here.
    expect(lintServer(def).findings.filter((f) => f.tool === 'answer_ticket')).toEqual([
      {
        tool: 'answer_ticket',
        rule: 'annotations-consistent',
        message: 'the tool waits for an approval gate but says readOnlyHint: true',
        path: 'annotations.readOnlyHint',
      },
    ]);
  });
});
