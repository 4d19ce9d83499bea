import {
  Server,
  type Implementation,
  type JSONRPCRequest,
  type Result,
  type ServerCapabilities,
  type ServerContext,
  type ServerOptions,
} from '@modelcontextprotocol/server';
import { TASKS_EXTENSION, type TaskWire } from './task-state.ts';

/** The first protocol revision of the 2026 era; revisions are ISO dates, so they compare as strings. */
const FIRST_MODERN = '2026-07-28';

/** The experimental task capability of 2025-11-25: listing, cancelling, and task-augmented `tools/call`. */
const TASKS_2025 = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/** The task answers that a `tools/call` handler returns in place of a `CallToolResult`. */
const taskAnswers = new WeakSet<object>();

/** Marks `answer` as a task created by a `tools/call`, so that the server sends it as it is. */
export function taskAnswer<T extends object>(answer: T): T {
  taskAnswers.add(answer);
  return answer;
}

/** Carries a task answer past the SDK's `CallToolResult` check of `tools/call`. */
class TaskCreated extends Error {
  constructor(readonly answer: Result) {
    super('a task was created');
  }
}

/**
 * The SDK's `Server`, taught the two task wires it knows only as types (SDK 2.4 serves no tasks of
 * its own): a `tools/call` may answer a task instead of a `CallToolResult` (`resultType: "task"` on
 * 2026-07-28, `{ task }` on 2025-11-25), and the capabilities say so in each revision's words —
 * `capabilities.tasks` in a 2025-11-25 `initialize`, the `io.modelcontextprotocol/tasks`
 * extension in a 2026-07-28 `server/discover` — and only on a server that runs tasks.
 */
export class TaskAwareServer extends Server {
  /** Set after construction: the base constructor calls the overrides below before fields exist. */
  protected runsTasks = false;

  constructor(info: Implementation, options: ServerOptions, runsTasks: boolean) {
    super(info, options);
    this.runsTasks = runsTasks;
  }

  /** The wire this instance speaks: fixed per instance by the serving entry (2026) or `initialize` (2025). */
  wire(): TaskWire {
    return (this.getNegotiatedProtocolVersion() ?? '') >= FIRST_MODERN ? '2026-07-28' : '2025-11-25';
  }

  override getCapabilities(): ServerCapabilities {
    const base = super.getCapabilities();
    if (!this.runsTasks) return base;
    if (this.wire() === '2026-07-28')
      return {
        ...base,
        extensions: { ...(base as { extensions?: object }).extensions, [TASKS_EXTENSION]: {} },
      } as ServerCapabilities;
    return { ...base, tasks: TASKS_2025 } as ServerCapabilities;
  }

  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    const checked = super._wrapHandler(method, async (request, ctx) => {
      const result = await handler(request, ctx);
      if (taskAnswers.has(result)) throw new TaskCreated(result);
      return result;
    });
    return async (request, ctx) => {
      try {
        return await checked(request, ctx);
      } catch (err) {
        if (err instanceof TaskCreated) return err.answer;
        throw err;
      }
    };
  }
}
