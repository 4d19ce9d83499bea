import { z } from 'zod';

// The one schema of a deployable's manifest: the `bulkhead` field of its package.json. Discovery (the
// CLI, infra's checks, the tests), a server resolving its upstreams at start and the templates of
// `new server` all read the manifest through it, so a new field or a new upstream auth kind is written here.

const NAME = /^[a-z][a-z0-9-]{0,39}$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

const envName = z.string().regex(ENV_NAME, 'an environment variable name (A-Z, 0-9, _)');
const filePath = z.string().min(1);

const bearer = z
  .object({ type: z.literal('bearer'), tokenEnv: envName.optional(), tokenFile: filePath.optional() })
  .strict();
const basic = z
  .object({
    type: z.literal('basic'),
    username: z.string().optional(),
    usernameEnv: envName.optional(),
    passwordEnv: envName.optional(),
    passwordFile: filePath.optional(),
  })
  .strict();
const header = z
  .object({
    type: z.literal('header'),
    header: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'an HTTP header name'),
    valueEnv: envName.optional(),
    valueFile: filePath.optional(),
  })
  .strict();
const mtls = z
  .object({ type: z.literal('mtls'), certFile: filePath, keyFile: filePath, caFile: filePath.optional() })
  .strict();
const none = z.object({ type: z.literal('none') }).strict();

/** How a server authenticates to an upstream: the secrets come from variables or mounted files, never the manifest. */
export const upstreamAuthSchema = z.discriminatedUnion('type', [bearer, basic, header, mtls, none]);

const BASE_URL_ENV = 'the variable that holds its base URL, e.g. "ALERTS_URL"';

/** One entry of `bulkhead.upstreams`. */
export const upstreamManifestSchema = z
  .object({
    /** The environment variable holding the base URL (`ALERTS_URL`): `pnpm start` starts the server only when it is set. */
    baseUrlEnv: z.string({ error: BASE_URL_ENV }).regex(ENV_NAME, BASE_URL_ENV),
    /** How the system is named to the model ("the alerting system"); default "the <name> upstream". */
    title: z.string().min(1).max(80).optional(),
    auth: upstreamAuthSchema.default({ type: 'none' }),
    /** Largest response body read, in bytes (default 1 MiB); past it the request is refused. */
    maxResponseBytes: z
      .number()
      .int()
      .min(1)
      .max(256 * 1024 * 1024)
      .default(1024 * 1024),
    /** How long one request may wait for its answer (default 5 s), always within the call's own limit. */
    timeoutMs: z.number().int().min(10).max(600_000).default(5000),
    /** Further attempts of a read (GET, HEAD) on a connection error or 502/503/504 (default 2). */
    retries: z.number().int().min(0).max(5).default(2),
  })
  .strict();

/** `bulkhead.upstreams`: the systems a server may reach, by name. */
export const upstreamsManifestSchema = z.record(
  z.string().regex(NAME, 'an upstream name: lower-case letters, digits and -'),
  upstreamManifestSchema,
  { error: '{ "<name>": { "baseUrlEnv": "<VARIABLE>", … } }' },
);

/** `bulkhead.upstreams` as written in a package.json. */
export type UpstreamManifest = z.input<typeof upstreamsManifestSchema>;

const secretSource = z
  .object({ env: envName.optional(), file: filePath.optional() })
  .strict()
  .refine((s) => (s.env === undefined) !== (s.file === undefined), 'exactly one of env or file');

/**
 * `bulkhead.mcpUpstream`: the MCP server a bounded server stands in front of. Either a `command` run
 * over stdio (with `args`, and environment variables for the child, each from a variable or a mounted
 * file) or a Streamable HTTP `url`, reached only at its origin (with a header whose value comes from a
 * variable or file). Credentials are never written here.
 */
export const mcpUpstreamManifestSchema = z
  .object({
    name: z.string().regex(NAME, 'an upstream name: lower-case letters, digits and -'),
    /** How people call it ("the file server"), named in every error about it. */
    title: z.string().min(1).max(80).optional(),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    env: z.record(envName, secretSource).default({}),
    url: z.url({ protocol: /^https?$/ }).optional(),
    header: z
      .object({ name: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'an HTTP header name') })
      .extend({ env: envName.optional(), file: filePath.optional() })
      .strict()
      .optional(),
    /** The pin file, relative to the server's folder (default pins.json). */
    pins: filePath.default('pins.json'),
  })
  .strict()
  .refine((m) => (m.command === undefined) !== (m.url === undefined), 'exactly one of command or url')
  .refine((m) => m.url !== undefined || m.header === undefined, 'a header is sent only to a url');

/** `bulkhead.mcpUpstream` as written in a package.json. */
export type McpUpstreamManifest = z.input<typeof mcpUpstreamManifestSchema>;

const PORT = 'a whole number from 1 to 65535';
const FLAG = 'true or false';
const PROBE = '{ "tool": "<a read tool>", "arguments": { … } }';

/** The `bulkhead` field of a deployable's package.json. */
export const manifestSchema = z.object({
  /** `mcp` servers take MCP tokens; `console` is the approvers' web console. */
  kind: z.enum(['mcp', 'console'], { error: '"mcp" or "console"' }).default('mcp'),
  port: z.number({ error: PORT }).int({ error: PORT }).min(1, { error: PORT }).max(65535, { error: PORT }),
  /** Every scope the server's tools need (checked against its tools by `test/manifests.test.ts`). */
  scopes: z.array(z.string(), { error: 'a list of scope names, e.g. ["docs:read"]' }).default([]),
  /** True when some tool of the server is gated (checked against its tools, as above). */
  gated: z.boolean({ error: FLAG }).default(false),
  /** True when every token of this server is bound to one customer (`--customer` required). */
  customerBound: z.boolean({ error: FLAG }).default(false),
  /** A read call that succeeds on the demo data, for the token matrix and the image checks. */
  probe: z
    .object(
      { tool: z.string({ error: PROBE }), arguments: z.record(z.string(), z.unknown(), { error: PROBE }) },
      { error: PROBE },
    )
    .optional(),
  /** The other systems it reaches, each with the variable holding its base URL. */
  upstreams: upstreamsManifestSchema.default({}),
  /** The upstream MCP server it stands in front of (`new server --from-mcp`), if any. */
  mcpUpstream: mcpUpstreamManifestSchema.optional(),
});

/** A deployable's manifest as checked: every default filled in. */
export type Manifest = z.output<typeof manifestSchema>;

/**
 * One line per problem of a manifest, naming the field: `bulkhead.port: a whole number from 1 to 65535`.
 * `under` is the field the checked value was taken from (`upstreams`, when only that was checked).
 */
export function manifestProblems(error: z.ZodError, under?: string): string[] {
  return error.issues.map((i) => {
    const field = ['bulkhead', ...(under ? [under] : []), ...i.path.map(String)].join('.');
    return `${field}: ${i.message}`;
  });
}
