import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { escapeJson, lintTools, RULES, visible, type LintableTool } from '@bulkhead/core/operator';
import { parse, referenceOf, type Command } from '../command.ts';
import { table } from '../format.ts';
import { CliError, UsageError } from '../io.ts';

const DEFAULT_MODEL_BUDGET = 6000;

const help = `Usage: bulkhead lint-tools --url <url> [--header "Name: value"]... [--json] [--budget <chars>] [--model-budget <chars>]

Checks what a running MCP server shows the model — every tool's name,
description, schemas and annotations — against the rules below, and measures
its tools/list — the part a model reads (each tool's name, title, description and
input schema), against its budget, and the whole list, shown — in characters,
and tokens estimated as characters / 4. Use it to
vet a third-party server before connecting it to an assistant. A shipped
Bulkhead server is linted by its own test (src/server.test.ts, lintServer).

Options:
  --url <url>       the server's MCP endpoint, e.g. http://127.0.0.1:3103/mcp
  --header <h>      a request header, repeatable: --header "Authorization: Bearer bh_..."
  --json            print the findings as a JSON list of { tool, rule, message, path }
  --budget <chars>  a limit on the whole tools/list in characters (default: none, it is only shown)
  --model-budget <chars>
                    the budget of the part a model reads (default ${DEFAULT_MODEL_BUDGET.toLocaleString('en-US')})

Exit code: 0 no findings, 1 findings (or the server could not be read), 2 usage error.

Rules:
${RULES.map((r) => `  ${r.id.padEnd(24)} ${r.checks}`).join('\n')}

Reference: ${referenceOf('lint-tools')}.`;

function headers(list: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of list) {
    const colon = h.indexOf(':');
    const name = colon > 0 ? h.slice(0, colon).trim() : '';
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name))
      throw new UsageError('--header must look like "Name: value"'); // never echo it: it may hold a token
    out[name] = h.slice(colon + 1).trim();
  }
  return out;
}

/** A sentence for why the server could not be read, without echoing any header value. */
function unreachable(url: URL, err: unknown): CliError {
  const chain: string[] = [];
  for (let e: unknown = err; e instanceof Error && chain.length < 5; e = e.cause)
    chain.push(`${(e as { code?: unknown }).code ?? ''} ${e.message}`);
  const text = chain.join(' ');
  if (/\b401\b|unauthori[sz]ed|invalid_token/i.test(text))
    return new CliError(
      `${url} refused the request (401): the token is missing, wrong, expired or issued for another server. Pass it with --header "Authorization: Bearer <token>".`,
    );
  if (/\b403\b|forbidden/i.test(text))
    return new CliError(`${url} refused the request (403): this token or origin is not allowed there.`);
  if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|EHOSTUNREACH|fetch failed/i.test(text))
    return new CliError(`cannot reach ${url}: is the server running, and is this its MCP endpoint?`);
  return new CliError(`could not list the tools of ${url}: ${chain[0] ?? String(err)}`);
}

async function listTools(url: URL, requestHeaders: Record<string, string>): Promise<LintableTool[]> {
  const client = new Client(
    { name: 'bulkhead-lint-tools', version: '0.1.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: requestHeaders } });
  try {
    await client.connect(transport, { timeout: 15_000 });
    const tools: LintableTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: 15_000 });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  } catch (err) {
    throw unreachable(url, err);
  } finally {
    await client.close().catch(() => {});
  }
}

/** `bulkhead lint-tools --url …`: the tool linter against any running MCP server. */
export const lintToolsCommand: Command = {
  name: 'lint-tools',
  summary: 'check the tools a running MCP server shows the model',
  help,
  async run(argv, { io }) {
    const { values } = parse(argv, {
      url: { type: 'string' },
      header: { type: 'string', multiple: true, default: [] },
      json: { type: 'boolean', default: false },
      budget: { type: 'string' },
      'model-budget': { type: 'string' },
    });
    if (!values.url)
      throw new UsageError(
        '--url is required. lint-tools checks a running server; a shipped server is linted by its own test (src/server.test.ts).',
      );
    let url: URL;
    try {
      url = new URL(values.url);
    } catch {
      throw new UsageError(`--url "${values.url}" is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UsageError(`--url must be http:// or https://, got ${url.protocol}`);
    const chars = (option: string, value: string) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0)
        throw new UsageError(`--${option} must be a positive whole number of characters, got "${value}"`);
      return n;
    };
    const budget = values.budget === undefined ? undefined : chars('budget', values.budget);
    const modelBudget =
      values['model-budget'] === undefined
        ? DEFAULT_MODEL_BUDGET
        : chars('model-budget', values['model-budget']);

    const tools = await listTools(url, headers(values.header));
    const { findings, size } = lintTools(tools, { budgetChars: budget, modelBudgetChars: modelBudget });
    const n = (x: number) => x.toLocaleString('en-US');
    const summary = `${tools.length} tool${tools.length === 1 ? '' : 's'}, model part ${n(size.modelChars)} characters (~${n(size.modelTokens)} tokens) of ${n(modelBudget)}, tools/list ${n(size.chars)} characters (~${n(size.tokens)} tokens)${budget === undefined ? '' : ` of ${n(budget)}`}: ${findings.length ? `${findings.length} finding${findings.length === 1 ? '' : 's'}` : 'clean'}.`;
    if (values.json) {
      io.out(escapeJson(JSON.stringify(findings, null, 2)));
      io.err(summary);
    } else {
      if (findings.length) {
        io.out(
          table(
            ['TOOL', 'RULE', 'WHERE', 'FINDING'],
            findings.map((f) => [visible(f.tool ?? '(all)'), f.rule, visible(f.path), visible(f.message)]),
          ),
        );
        io.out('');
        const used = RULES.filter((r) => findings.some((f) => f.rule === r.id));
        for (const r of used) io.out(`${r.id}: ${r.reason} Fix: ${r.fix}`);
        io.out('');
      }
      io.out(summary);
    }
    return findings.length ? 1 : 0;
  },
};
