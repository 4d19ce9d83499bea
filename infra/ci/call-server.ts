// Calls a running deployable the way its users do, and checks the answer: an MCP server through
// a real MCP client (initialize, tools/list, tools/call), the console through HTTP with an
// approver token. Exit 0 when the answer holds every --expect text, 1 otherwise.
//
//   tsx infra/ci/call-server.ts --url http://127.0.0.1:3103 --token bh_… --tool search_docs \
//     --args '{"query":"kubernetes"}' --expect 'Deploying on Kubernetes'
//   tsx infra/ci/call-server.ts --console --url http://127.0.0.1:3100 --token bh_… --expect 'CI approver'
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '{}' },
    expect: { type: 'string', multiple: true, default: [] },
    console: { type: 'boolean', default: false },
  },
});
if (!values.url || !values.token || (!values.console && !values.tool)) {
  console.error(
    'usage: call-server.ts --url <base url> --token <token> (--tool <name> [--args <json>] | --console) [--expect <text>]...',
  );
  process.exit(2);
}

function verdict(what: string, text: string, ok: boolean): never {
  const missing = values.expect!.filter((e) => !text.includes(e));
  const pass = ok && missing.length === 0;
  console.log(
    `${what}: ${pass ? 'ok' : 'FAILED'}${missing.length ? `; missing ${JSON.stringify(missing)}` : ''}\n  ${text.slice(0, 400).replaceAll('\n', ' ')}`,
  );
  process.exit(pass ? 0 : 1);
}

if (values.console) {
  // An approver token as a bearer opens the console's pages without a browser session.
  const res = await fetch(`${values.url}/`, {
    headers: { Authorization: `Bearer ${values.token}` },
    redirect: 'manual',
  });
  verdict(`GET ${values.url}/ as an approver (${res.status})`, await res.text(), res.status === 200);
}

const client = new Client({ name: 'bulkhead-infra-ci', version: '1.0.0' });
await client.connect(
  new StreamableHTTPClientTransport(new URL('/mcp', values.url), {
    requestInit: { headers: { Authorization: `Bearer ${values.token}` } },
  }),
);
const { tools } = await client.listTools();
const result = await client.callTool({
  name: values.tool!,
  arguments: JSON.parse(values.args!) as Record<string, unknown>,
});
await client.close();
const text = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join('\n');
verdict(
  `tools/call ${values.tool} on ${values.url} (${tools.length} tools listed: ${tools.map((t) => t.name).join(', ')})`,
  text,
  result.isError !== true && tools.some((t) => t.name === values.tool),
);
