import { findHiddenCharacters, stripHidden } from '../../text-safety/untrusted/hidden.ts';
import { findInstructions } from '../../text-safety/untrusted/detect.ts';
import { codePointLabel } from '../../text-safety/visible.ts';
import type { RuleId } from './rules.ts';

/** A problem in one string of a tool definition. */
export interface TextProblem {
  rule: RuleId;
  message: string;
}

const HTML = /<\/?[a-z][a-z0-9-]*(?:\s[^<>]*)?\/?>|<!--|&(?:[a-z]{2,8}|#\d{1,7}|#x[0-9a-f]{1,6});/gi;
const URL_PATTERN =
  /\b[a-z][a-z0-9+.-]{1,15}:\/\/[^\s<>"'`)\]]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}[^\s<>"'`)\]]*|\b(?:mailto|javascript|data):[^\s<>"'`)\]]+/gi;
const MARKDOWN_LINK = /!?\[[^\]\n]+\]\([^)\n]+\)/g;

// Orders that only make sense addressed to the model; the injection detector's patterns are added to these.
const ORDERS: readonly RegExp[] = [
  /\balways\s+(?:call|use|run|invoke|ask|check|prefer|start|begin|include|pass|consult|read|send|try|choose|select|respond|reply|answer|say|tell|mention|do)\b/gi,
  /\bnever\s+(?:call|use|run|invoke|ask|tell|mention|reveal|show|inform|say|skip|question|refuse|disclose|display|expose)\b/gi,
  /\byou\s+(?:must|should|shall|have\s+to|are\s+required\s+to|are\s+instructed\s+to)\b/gi,
  /\b(?:do\s+not|don't|never)\s+(?:tell|inform|notify|mention|reveal|show|disclose)\s+(?:(?:this|it|anything|that)\s+)?(?:to\s+)?(?:the\s+)?(?:user|human|operator|customer|anyone)\b/gi,
  /\b(?:do\s+not|don't)\s+(?:mention|reveal|disclose)\b/gi,
  /\bwithout\s+(?:telling|informing|asking|notifying|alerting)\b/gi,
  /\b(?:ignore|disregard|forget)\b/gi,
  /\b(?:call|use|run|invoke)\s+(?:this|it|me)(?:\s+tool)?\s+(?:first|before|whenever|every\s+time|each\s+time|instead|always)\b/gi,
  /\bbefore\s+(?:calling|using|invoking|running)\s+(?:any|other|another|the\s+other|this)\b/gi,
  /\b(?:do\s+not|don't|never)\s+(?:use|call|invoke)\s+(?:any\s+)?(?:other|another|the\s+other)\s+tools?\b/gi,
  /\binstead\s+of\s+(?:using|calling)\s+(?:any|other|another|the\s+other)\s+tools?\b/gi,
  /\bthe\s+user\s+(?:must\s+not|should\s+not|shouldn't|does\s+not\s+need\s+to|doesn't\s+need\s+to|need\s+not)\s+(?:know|see|be\s+told|learn)\b/gi,
  /\b(?:read|send|include|pass|upload|attach|forward)\b[^\n]{0,60}?(?:~\/\.ssh|id_rsa|\.env\b|mcp\.json|\/etc\/passwd|\.aws\/credentials|private\s+key)/gi,
  // An order of calls: "call get_y first", "then this tool", "before answering the user".
  /\b(?:call|use|run|invoke)\s+`?[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+`?\s+(?:first|beforehand)\b/gi,
  /\bthen\s+(?:(?:call|use|run|invoke)\s+(?:this|it|me)|this\s+(?:tool|one|function))\b/gi,
  /\bbefore\s+(?:answering|responding|replying|you\s+(?:answer|respond|reply))\b/gi,
  /\bbefore\s+(?:any|all|every)\s+other\s+tools?\b/gi,
  /\b(?:must|should|shall|needs?\s+to|has\s+to|is\s+(?:required|meant)\s+to)\s+(?:always\s+|first\s+|only\s+)?be\s+(?:called|used|invoked|run|executed|consulted)\b/gi,
  /\b(?:make\s+sure|be\s+sure|remember)\s+(?:to|that\s+you|you)\b/gi,
  // The model as the subject of a duty: "the assistant should not mention …" (not "an agent must", a person in a helpdesk).
  /\b(?:the|an?|any|every|this|your)\s+(?:ai\s+)?(?:assistant|model|ai|llm|chatbot)s?\s+(?:must|should|shall|needs?\s+to|has\s+to|is\s+to|ought\s+to|may\s+not|mustn't|shouldn't|cannot|can't|will\s+not|won't)\b/gi,
  /\b(?:should|must|shall)\s+(?:not|never)\s+(?:mention|tell|reveal|disclose|inform|notify)\b/gi,
  // Self-promotion: "prefer this tool over all others".
  /\bprefer\s+(?:this|it|me)\b/gi,
  /\b(?:over|instead\s+of|rather\s+than|above)\s+(?:all|any|every)\s+(?:the\s+)?(?:others|other\s+(?:tools?|functions?))\b/gi,
  // The conversation sent out through an argument.
  /\b(?:include|pass|send|put|add|copy|paste|attach|append|forward|provide)\b[^\n]{0,60}?\b(?:conversation|chat\s+history|message\s+history|(?:previous|earlier|prior)\s+messages|system\s+prompt|context\s+window|transcript)\b/gi,
];

function quoteList(matches: readonly string[]): string {
  return [...new Set(matches)]
    .map((m) => JSON.stringify(m.length > 60 ? `${m.slice(0, 57)}...` : m))
    .join(', ');
}

/** Orders to the model in `text`, in text order, overlapping matches merged into the first. */
export function findOrders(text: string): string[] {
  const plain = stripHidden(text);
  const hits: { index: number; end: number }[] = [];
  for (const pattern of ORDERS) {
    for (const m of plain.matchAll(pattern)) hits.push({ index: m.index, end: m.index + m[0].length });
  }
  for (const m of findInstructions(text)) hits.push({ index: m.index, end: m.index + m.length });
  hits.sort((a, b) => a.index - b.index || b.end - a.end);
  const merged: { index: number; end: number }[] = [];
  for (const h of hits) {
    const last = merged.at(-1);
    if (last && h.index < last.end) last.end = Math.max(last.end, h.end);
    else merged.push({ index: h.index, end: h.end });
  }
  return merged.map((h) => plain.slice(h.index, h.end).replace(/\s+/g, ' ').trim());
}

/** Hidden characters as a finding message, or undefined. Unicode tag characters are decoded: they spell ASCII. */
export function hiddenMessage(text: string, what = 'contains'): string | undefined {
  const hidden = findHiddenCharacters(text, 'strict');
  if (!hidden.length) return undefined;
  const labels = [...new Set(hidden.map((h) => codePointLabel(h.codePoint)))];
  const shown =
    labels.length > 6 ? `${labels.slice(0, 5).join(', ')} and ${labels.length - 5} more` : labels.join(', ');
  const tags = hidden
    .filter((h) => h.codePoint >= 0xe0020 && h.codePoint <= 0xe007e)
    .map((h) => String.fromCharCode(h.codePoint - 0xe0000))
    .join('');
  return `${what} ${hidden.length} hidden character${hidden.length === 1 ? '' : 's'} (${shown})${tags ? `; the tag characters spell ${JSON.stringify(tags)}` : ''}`;
}

/**
 * The checks every string the model sees gets: hidden characters, HTML,
 * URLs, markdown links, orders. `only` limits them (patterns and property
 * names get the hidden-character check alone).
 */
export function checkText(text: string, only?: 'hidden'): TextProblem[] {
  const problems: TextProblem[] = [];
  const hidden = hiddenMessage(text);
  if (hidden) problems.push({ rule: 'hidden-characters', message: hidden });
  if (only === 'hidden') return problems;
  const html = text.match(HTML);
  if (html) problems.push({ rule: 'no-html', message: `contains HTML: ${quoteList(html)}` });
  const urls = text.match(URL_PATTERN);
  if (urls) problems.push({ rule: 'no-urls', message: `contains a URL: ${quoteList(urls)}` });
  const links = text.match(MARKDOWN_LINK);
  if (links)
    problems.push({ rule: 'no-markdown-links', message: `contains a markdown link: ${quoteList(links)}` });
  const orders = findOrders(text);
  if (orders.length)
    problems.push({ rule: 'no-orders', message: `gives the model orders: ${quoteList(orders)}` });
  return problems;
}
