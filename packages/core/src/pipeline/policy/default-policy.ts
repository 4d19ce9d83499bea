/**
 * The policy set a deployment has until an operator approves another: today's gates, as policy. A
 * tool that does not act outward runs; every tool that does (one with a gate) waits for one person.
 */
export const DEFAULT_POLICY = `@id("tools that do not act outward run")
permit(principal, action, resource) when { !context.gated };

@id("tools that act outward wait for one person")
@approvals("1")
permit(principal, action, resource) when { context.gated };
`;
