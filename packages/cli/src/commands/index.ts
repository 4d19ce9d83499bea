import { referenceOf, type Command } from '../command.ts';

/**
 * A top-level command as `bulkhead --help` lists it. Its code (and the kit, the SDK, zod and the
 * database client behind it) is loaded only when it runs, so `--help` answers at once;
 * commands.test.ts checks that each summary is the one the loaded command has.
 */
export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

/** Every top-level command, in the order `--help` lists them. */
export const commands: CommandEntry[] = [
  {
    name: 'start',
    summary: 'start the database (embedded unless DATABASE_URL) and every server',
    load: async () => {
      const [{ startCommand, startHooks }, { kbStartHook }, { demoStartHook }] = await Promise.all([
        import('./start.ts'),
        import('./kb-start.ts'),
        import('./demo-start.ts'),
      ]);
      for (const hook of [kbStartHook, demoStartHook]) if (!startHooks.includes(hook)) startHooks.push(hook);
      return startCommand;
    },
  },
  {
    name: 'tokens',
    summary: 'Issue, list, rotate and revoke per-client access tokens.',
    load: async () => (await import('./tokens.ts')).tokensCommand,
  },
  {
    name: 'tools',
    summary: 'Switch a tool of a server off for an incident, and on again.',
    load: async () => (await import('./tools.ts')).toolsCommand,
  },
  {
    name: 'pins',
    summary: 'Keep the pinned tool definitions of an upstream MCP server: update, drift, accept.',
    load: async () => (await import('./pins.ts')).pinsCommand,
  },
  {
    name: 'approvals',
    summary: 'List, inspect, approve and reject gated actions.',
    load: async () => (await import('./approvals.ts')).approvalsCommand,
  },
  {
    name: 'approvers',
    summary: 'Issue, list and revoke approver tokens for the console.',
    load: async () => (await import('./approvers.ts')).approversCommand,
  },
  {
    name: 'groups',
    summary: "Map the identity provider's groups to rights: approve, operate, hold tokens.",
    load: async () => (await import('./groups.ts')).groupsCommand,
  },
  {
    name: 'scim',
    summary: "Set up SCIM provisioning: the identity provider's bearer token.",
    load: async () => (await import('./scim.ts')).scimCommand,
  },
  {
    name: 'policy',
    summary: 'Propose, approve, show, test and explain who must approve what (Cedar policy).',
    load: async () => (await import('./policy.ts')).policyCommand,
  },
  {
    name: 'audit',
    summary: 'Read, export, seal, forward, verify and prune the audit log; make the key that signs it.',
    load: async () => (await import('./audit.ts')).auditCommand,
  },
  {
    name: 'kb',
    summary: 'the engineering knowledge base (dev-knowledge)',
    load: async () => (await import('./kb.ts')).kbCommand,
  },
  {
    name: 'lint-tools',
    summary: 'check the tools a running MCP server shows the model',
    load: async () => (await import('./lint-tools.ts')).lintToolsCommand,
  },
  {
    name: 'new',
    summary: 'scaffold a new bounded server',
    load: async () => (await import('./new.ts')).newCommand,
  },
  {
    name: 'db',
    summary: 'Database schema and data.',
    load: async () => (await import('./db.ts')).dbCommand(),
  },
];

/** `bulkhead --help`: the commands, one line each, and where the reference is. */
export function commandListHelp(list: CommandEntry[] = commands): string {
  return [
    'Usage: bulkhead <command> [options]',
    '',
    'Bulkhead: MCP servers split by trust boundary.',
    '',
    'Commands:',
    ...list.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`),
    '',
    'Run `bulkhead <command> --help` for details. Scripts: most commands take --json.',
    `Reference: ${referenceOf()}.`,
  ].join('\n');
}
