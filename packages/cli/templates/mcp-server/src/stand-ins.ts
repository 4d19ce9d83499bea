// Not a template: stand-ins for the code `bulkhead new server --from-mcp` computes, each typed as the
// code that replaces it, so that the templates around them type-check. The generator drops every
// import of this file (see packages/cli/templates/README.md).

/** What a tool's test calls it with: made from the pinned input schema. */
export const __EXAMPLE_ARGS__: Record<string, unknown> = { message: 'example' };
/** The linter's findings on the pinned tools when they were pinned: `<tool> <rule> <path>`. */
export const __FINDINGS__: string[] = ['echo description-returns description'];
/** The test token's options: a customer for a customer-bound server; none, the comma before it included, otherwise. */
export const __TOKEN_OPTIONS__ = { customerId: 'C-1001' };
