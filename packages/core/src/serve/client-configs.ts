// The client configuration printed with a new token, by the CLI (`tokens issue`, `tokens rotate`) and
// shown by the console's operator pages: one builder, so both say the same.

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Ready-to-paste configuration for the common MCP clients. Where a client can
 * keep the secret out of the file people share, it does: VS Code asks for the
 * token once (`${input:…}`, `password: true`) and keeps it in its secret store,
 * so `.vscode/mcp.json` can be committed; Claude Desktop's mcp-remote bridge
 * reads it from `env` (its documented `--header "Authorization:${AUTH_HEADER}"`,
 * no space, so Windows does not split the argument), not from its arguments,
 * which any process list shows.
 */
export function clientConfigs(
  server: string,
  url: string,
  token: string,
): { client: string; where: string; text: string }[] {
  const input = `bulkhead-${server}-token`;
  const parsed = new URL(url);
  // mcp-remote refuses plain HTTP except to localhost unless told the network is trusted.
  const allowHttp = parsed.protocol === 'http:' && !LOOPBACK.has(parsed.hostname) ? ['--allow-http'] : [];
  return [
    {
      client: 'Claude Code',
      where: 'run in a terminal',
      text: `claude mcp add --transport http ${server} ${url} --header "Authorization: Bearer ${token}"`,
    },
    {
      client: 'Claude Desktop',
      where: 'claude_desktop_config.json (through the mcp-remote bridge; the token stays in env)',
      text: JSON.stringify(
        {
          mcpServers: {
            [server]: {
              command: 'npx',
              args: ['-y', 'mcp-remote', url, ...allowHttp, '--header', 'Authorization:${AUTH_HEADER}'],
              env: { AUTH_HEADER: `Bearer ${token}` },
            },
          },
        },
        null,
        2,
      ),
    },
    {
      client: 'Cursor',
      where: '~/.cursor/mcp.json',
      text: JSON.stringify(
        { mcpServers: { [server]: { url, headers: { Authorization: `Bearer ${token}` } } } },
        null,
        2,
      ),
    },
    {
      client: 'VS Code',
      where: '.vscode/mcp.json (no secret in the file: VS Code asks for the token once and keeps it)',
      text: JSON.stringify(
        {
          inputs: [
            {
              type: 'promptString',
              id: input,
              description: `Bulkhead token for ${server} (bh_${server}_…)`,
              password: true,
            },
          ],
          servers: {
            [server]: { type: 'http', url, headers: { Authorization: `Bearer \${input:${input}}` } },
          },
        },
        null,
        2,
      ),
    },
  ];
}
