import type { Tool } from '@modelcontextprotocol/client';
import { lintTools, type LintFinding } from '../tool-definition/lint/lint-tools.ts';
import type { AnyTool } from '../tool-definition/define-tool.ts';
import { diffPin, pinHash, upstreamTool, type PinDiff, type PinnedTool, type UpstreamTool } from './pins.ts';
import { pinnedAnnotations } from './pinned-tool.ts';

/** The linter's rules that catch a poisoned definition: a drift with one of their findings cannot be accepted. */
export const BLOCKING_RULES: ReadonlySet<string> = new Set([
  'hidden-characters',
  'no-html',
  'no-urls',
  'no-markdown-links',
  'no-orders',
]);

/** A definition the upstream lists now that its pin does not cover: a changed pinned tool, or a new one. */
export interface Drift {
  upstream: string;
  /** The upstream's name of the tool, and the name the server serves it under (null for a new tool). */
  tool: string;
  served: string | null;
  kind: 'changed' | 'new';
  sha256: string;
  pinned: UpstreamTool | null;
  live: UpstreamTool;
  diff: PinDiff[];
  /** The linter's findings on the live definition (as the server would list it). */
  findings: LintFinding[];
  /** Why it cannot be accepted here; null when it can. */
  blocked: string | null;
}

/** What one listing of an upstream means for the tools served from it. */
export interface Evaluation {
  /** Served names withheld: drifted, or no longer listed by the upstream. */
  withheld: Set<string>;
  /** Served names whose drifted definition an operator accepted: served with the accepted definition. */
  accepted: Map<string, PinnedTool>;
  drifts: Drift[];
}

/** Why a drifted definition cannot be accepted for a deployment, or null. */
function blockedBy(pin: PinnedTool | null, live: UpstreamTool, findings: LintFinding[]): string | null {
  const safety = findings.filter((f) => BLOCKING_RULES.has(f.rule));
  if (safety.length) return safety.map((f) => `${f.rule} (${f.path}): ${f.message}`).join('; ');
  if (pin && pinnedAnnotations(pin).readOnlyHint && !pinnedAnnotations({ ...live, sha256: '' }).readOnlyHint)
    return 'the upstream no longer marks the tool read-only: update the pins (bulkhead pins update) and review them';
  return null;
}

/** The live definition linted as the server would list it (the linter reads listings). */
function lintLive(live: UpstreamTool, others: readonly UpstreamTool[]): LintFinding[] {
  const listing = (t: UpstreamTool) => ({
    name: t.name,
    ...(t.title !== undefined ? { title: t.title } : {}),
    description: t.description ?? '',
    inputSchema: t.inputSchema,
    annotations: { ...pinnedAnnotations({ ...t, sha256: '' }), ...(t.title ? { title: t.title } : {}) },
  });
  const all = [live, ...others.filter((o) => o.name !== live.name)].map(listing);
  return lintTools(all).findings.filter((f) => f.tool === live.name);
}

/**
 * Compares an upstream's live tools/list with the pins of the tools served from it. A pinned tool whose
 * live definition hashes as pinned is served; one whose hash an operator accepted is served with the
 * accepted definition; any other, or one the upstream no longer lists, is withheld. Every tool the
 * upstream lists that no pin covers is a new one (never served: it is pinned by code review).
 */
export function evaluateListing(
  upstream: string,
  served: readonly AnyTool[],
  live: readonly Tool[],
  accepted: ReadonlySet<string>,
  /** The upstream's tools known but not chosen when it was pinned (`pins.json`'s `others`); without it no tool counts as new. */
  known?: readonly string[],
): Evaluation {
  const liveTools = live.map((t) => upstreamTool(t as unknown as Record<string, unknown>));
  const byName = new Map(liveTools.map((t) => [t.name, t]));
  const out: Evaluation = { withheld: new Set(), accepted: new Map(), drifts: [] };
  const pinnedNames = new Set<string>();
  for (const tool of served) {
    if (tool.pinned?.upstream !== upstream) continue;
    const pin = tool.pinned.pin;
    pinnedNames.add(pin.name);
    const now = byName.get(pin.name);
    if (!now) {
      out.withheld.add(tool.name);
      continue;
    }
    const sha256 = pinHash(now);
    if (sha256 === pin.sha256) continue;
    if (accepted.has(acceptanceKey(upstream, pin.name, sha256))) {
      out.accepted.set(tool.name, { ...now, sha256 });
      continue;
    }
    out.withheld.add(tool.name);
    const findings = lintLive(now, liveTools);
    const drift = {
      upstream,
      tool: pin.name,
      served: tool.name,
      kind: 'changed' as const,
      sha256,
      pinned: pin,
    };
    out.drifts.push({
      ...drift,
      live: now,
      diff: diffPin(pin, now),
      findings,
      blocked: blockedBy(pin, now, findings),
    });
  }
  for (const now of liveTools) {
    if (!known || pinnedNames.has(now.name) || known.includes(now.name)) continue;
    const findings = lintLive(now, liveTools);
    const sha256 = pinHash(now);
    out.drifts.push({
      upstream,
      tool: now.name,
      served: null,
      kind: 'new',
      sha256,
      pinned: null,
      live: now,
      diff: [],
      findings,
      blocked: null,
    });
  }
  return out;
}

/** The key of an acceptance: upstream, tool and the accepted definition's hash. */
export function acceptanceKey(upstream: string, tool: string, sha256: string): string {
  return `${upstream}\u0000${tool}\u0000${sha256}`;
}
