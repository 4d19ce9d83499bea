/** @jsxImportSource hono/jsx */
import { TOOL_NAME } from '@bulkhead/core/operator';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { field } from '../../form-field.ts';
import { page } from '../../layout/layout.tsx';
import { auditOperator } from '../../operator/audit.ts';
import { ToolsPage, type SwitchForm, type SwitchNotice } from './page.tsx';
import { recentlyCalledTools, switchedOffTools, switchTool } from './switches.ts';

const MAX_REASON = 500;
const DONE = ['off', 'on', 'was-off', 'was-on'] as const;

/** The page, with what a switch came to or why it was refused. */
async function toolsPage(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  extra: { notice?: SwitchNotice; error?: string; form?: SwitchForm } = {},
  status = 200,
) {
  const approver = c.get('approver');
  const [switches, seen] = await Promise.all([
    switchedOffTools(ctx.sql, approver.proof),
    recentlyCalledTools(
      ctx.sql,
      approver.proof,
      ctx.servers.map((s) => s.name),
    ),
  ]);
  return page(
    c,
    <ToolsPage
      approver={approver}
      switches={switches}
      servers={ctx.servers.map((s) => s.name)}
      seen={seen.filter((t) => TOOL_NAME.test(t.tool))}
      {...extra}
    />,
    status,
  );
}

/** The notice a redirect after a switch asks for, when it names a known server and a well-formed tool. */
function noticeOf(ctx: ConsoleContext, q: Record<string, string>): SwitchNotice | undefined {
  const done = DONE.find((d) => d === q.done);
  const { server = '', tool = '' } = q;
  return done && ctx.servers.some((s) => s.name === server) && TOOL_NAME.test(tool)
    ? { done, server, tool }
    : undefined;
}

/** Why a switch form cannot be carried out: the audit's reason and the sentence for the operator. */
function refusal(ctx: ConsoleContext, server: string, tool: string, reason: string | null) {
  if (!ctx.servers.some((s) => s.name === server))
    return { code: 'unknown_server', sentence: 'Choose one of the MCP servers.' };
  if (!TOOL_NAME.test(tool))
    return {
      code: 'invalid_tool',
      sentence: 'A tool name is 1 to 128 letters, digits, dots, underscores or hyphens.',
    };
  if (reason !== null && (!reason || reason.length > MAX_REASON))
    return { code: 'invalid_reason', sentence: `Say why it goes off, in 1 to ${MAX_REASON} characters.` };
  return undefined;
}

/** `POST /operator/tools/off` and `/on`: one tool of one MCP server, audited whatever comes of it. */
async function switchFromForm(c: ConsoleRequest, ctx: ConsoleContext, off: boolean) {
  const started = performance.now();
  const approver = c.get('approver');
  const form = await c.req.parseBody();
  const server = field(form, 'server') ?? '';
  const tool = (field(form, 'tool') ?? '').trim();
  const reason = off ? (field(form, 'reason') ?? '').trim() : null;
  const audited = { server, tool, reason, off };
  const given = { server, tool, reason: reason ?? '' };
  const refused = refusal(ctx, server, tool, reason);
  if (refused) {
    await auditOperator(c, ctx, {
      action: 'switch_tool',
      outcome: 'invalid_arguments',
      started,
      arguments: audited,
      summary: { reason: refused.code },
    });
    return toolsPage(c, ctx, { error: refused.sentence, form: given }, 400);
  }
  let changed: boolean;
  try {
    changed = await switchTool(ctx.sql, approver.proof, { server, tool, off, reason });
  } catch (err) {
    // The database's own checks: the server is no MCP server it knows (a console configured with one the
    // database was never told of), or the token lost the operator right since this request began.
    const code = (err as { code?: string }).code;
    if (code !== '23514' && code !== '42501') throw err;
    const notMcp = code === '23514';
    await auditOperator(c, ctx, {
      action: 'switch_tool',
      outcome: notMcp ? 'invalid_arguments' : 'forbidden',
      started,
      arguments: audited,
      summary: { reason: notMcp ? 'not_an_mcp_server' : 'not_an_operator' },
    });
    const sentence = notMcp
      ? `The database knows no MCP server ${server}: apply its roles (bulkhead db roles) first.`
      : 'Your token no longer carries the operator right.';
    return toolsPage(c, ctx, { error: sentence, form: given }, notMcp ? 400 : 403);
  }
  await auditOperator(c, ctx, {
    action: 'switch_tool',
    outcome: 'ok',
    started,
    arguments: audited,
    summary: { changed },
  });
  ctx.logger.info({ server, tool, off, changed, by: approver.label }, 'tool switched from the console');
  const done = off ? (changed ? 'off' : 'was-off') : changed ? 'on' : 'was-on';
  return c.redirect(`/operator/tools?${new URLSearchParams({ done, server, tool })}`, 303);
}

/** The tool switch (operators only): the switched-off tools, and forms to switch one off and on again. */
export function mountTools(app: Hono<ConsoleEnv>, ctx: ConsoleContext) {
  app.get('/operator/tools', (c) => {
    const notice = noticeOf(ctx, c.req.query());
    return toolsPage(c, ctx, notice ? { notice } : {});
  });
  app.post('/operator/tools/off', (c) => switchFromForm(c, ctx, true));
  app.post('/operator/tools/on', (c) => switchFromForm(c, ctx, false));
}
