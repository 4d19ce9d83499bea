// Instruction-like text: the table of what reads as an order to an assistant (English and German).

/** Why a text looks like it addresses the model rather than being plain data. */
export type InjectionReason =
  | 'hidden_characters'
  | 'override_instructions'
  | 'addresses_assistant'
  | 'tool_call_request'
  | 'secret_request'
  | 'role_marker';

/** The reasons in the order they are reported. */
export const INJECTION_REASONS: readonly InjectionReason[] = [
  'hidden_characters',
  'override_instructions',
  'addresses_assistant',
  'tool_call_request',
  'secret_request',
  'role_marker',
];

// JavaScript's \b only knows ASCII words; German words may start with an umlaut.
const BOUNDARY = String.raw`(?:(?<=[\p{L}\p{N}_])(?![\p{L}\p{N}_])|(?<![\p{L}\p{N}_])(?=[\p{L}\p{N}_]))`;
const rx = (source: string, flags = 'giu') => new RegExp(source.replaceAll(String.raw`\b`, BOUNDARY), flags);

const SECRET = String.raw`(?:api[\s_-]?keys?|passwords?|passwd|secrets?|tokens?|credentials|system\s+prompt|private\s+keys?|access\s+keys?|env(?:ironment)?\s+variables|connection\s+strings?)`;
const GEHEIM = String.raw`(?:api-?schlüssel|api-?keys?|passw(?:ö|oe)rter|passwort|kennw(?:ö|oe)rter|kennwort|tokens?|zugangsdaten|systemprompt|geheimnisse?|schlüssel)`;
const AI = String.raw`(?:ai|llm|language\s+model|chatbot|claude|chatgpt|gpt(?:-\d)?|copilot|gemini|ai\s+(?:assistant|agent|model|system)s?)`;

export const PATTERNS: readonly { reason: InjectionReason; pattern: RegExp }[] = [
  {
    reason: 'override_instructions',
    pattern: rx(
      String.raw`\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|my|these|those|of)\s+)*(?:(?:previous|prior|above|earlier|preceding|former|original|existing|current|system|initial|old|other)\s+)*(?:instructions?|prompts?|rules|directions|guidelines|guardrails|directives|programming|system\s+prompt)\b`,
    ),
  },
  {
    reason: 'override_instructions',
    pattern: rx(
      String.raw`\bforget\s+(?:everything|all)\s+(?:you\s+(?:were|have\s+been)\s+told|above|before|previously)\b`,
    ),
  },
  {
    reason: 'override_instructions',
    pattern: rx(
      String.raw`\b(?:do\s+not|don't|stop)\s+follow(?:ing)?\s+(?:your|the|any|those|these)\s+(?:\w+\s+)?(?:instructions|rules|guidelines)\b`,
    ),
  },
  {
    reason: 'override_instructions',
    pattern: rx(
      String.raw`\b(?:new|updated|real|actual|revised|additional)\s+(?:instructions|system\s+prompt|directives)\s*:`,
    ),
  },
  {
    reason: 'override_instructions',
    pattern: rx(
      String.raw`\b(?:ignorier(?:e|en)?|missachte(?:n)?|vergiss|vergessen|übergehe(?:n)?|umgehe(?:n)?|überschreibe(?:n)?)(?:\s+sie)?\s+(?:(?:alle|die|deine|ihre|sämtliche|jegliche)\s+)*(?:(?:vorherigen|bisherigen|obigen|vorigen|früheren|ursprünglichen|bestehenden|aktuellen|alten)\s+)*(?:anweisungen|instruktionen|regeln|vorgaben|befehle|anordnungen|richtlinien|systemanweisungen|systemprompts?)\b`,
    ),
  },
  {
    reason: 'override_instructions',
    pattern: rx(String.raw`\bneue\s+(?:anweisungen|instruktionen|systemanweisungen)\s*:`),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\byou\s+are\s+now\s+(?:a|an|my|the|no\s+longer|free|unrestricted|allowed|able|operating|acting|jailbroken|dan|in\s+(?:[\w-]+\s+)?mode)\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\b(?:from\s+now\s+on|starting\s+now|henceforth)\s*,?\s+you\s+(?:are|will|must|shall|should)\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\bif\s+you\s+are\s+an?\s+(?:ai|llm|language\s+model|assistant|chatbot|bot|agent)\b|\bas\s+an?\s+(?:ai|llm)\s+(?:assistant|model|agent)\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\b(?:dear|hey|hi|hello|attention|note\s+(?:to|for)|message\s+(?:to|for)|instructions?\s+for)\s+(?:the\s+|any\s+|all\s+)?${AI}\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\bto\s+(?:the\s+|any\s+|all\s+)?(?:ai\s+(?:assistant|agent|model)s?|llms?|language\s+models?|chatbots?|claude|chatgpt)\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\b(?:ai|llm|assistant|agent|model|bot)s?\s+(?:reading|processing|summari[sz]ing|parsing|analy[sz]ing)\s+(?:this|these)\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\b(?:pretend|act|behave|roleplay|role-play)\s+(?:to\s+be|as\s+if|like|as)\s+(?:you\s+(?:are|were)\s+)?(?:an?\s+|the\s+|my\s+)?(?:[\w-]+\s+)?(?:assistant|ai|admin(?:istrator)?|system|developer|operator|root|superuser|dan)\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\bdu\s+bist\s+(?:jetzt|nun|ab\s+sofort|ab\s+jetzt|von\s+nun\s+an)\b|\bab\s+(?:sofort|jetzt)\s+(?:bist|wirst|sollst|musst)\s+du\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\bsie\s+sind\s+(?:jetzt|nun|ab\s+sofort)\s+(?:im\s+[\p{L}-]*modus\b|(?:eine?|der|die)\s+(?:ki|assistent|administrator))`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\b(?:liebe|lieber|hallo|hey|an\s+die|an\s+den|hinweis\s+an\s+(?:die|den)|nachricht\s+an\s+(?:die|den))\s+(?:ki|ai|assistent(?:in)?|sprachmodell|chatbot|llm|ki-assistent(?:in|en)?)\b`,
    ),
  },
  {
    reason: 'addresses_assistant',
    pattern: rx(
      String.raw`\bwenn\s+du\s+(?:eine\s+ki|ein\s+(?:ki-)?(?:assistent|sprachmodell|bot|llm))\b|\btu(?:e)?\s+so,?\s+als\s+(?:ob|wärst)\b|\bgib\s+dich\s+als\b`,
    ),
  },
  {
    reason: 'tool_call_request',
    pattern: rx(
      String.raw`\b(?:call|invoke|execute|trigger|run|use)\s+(?:the\s+|this\s+|that\s+|your\s+)?` +
        '`?' +
        String.raw`[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+` +
        '`?' +
        String.raw`\s+(?:tool|function)\b`,
    ),
  },
  {
    reason: 'tool_call_request',
    pattern: rx(
      String.raw`\b(?:call|invoke)\s+(?:the|a|this|that|your|any|every)\s+(?:(?:following|appropriate|relevant|mcp|right)\s+)?(?:tools?|functions?)\b|\b(?:use|call)\s+(?:your|the)\s+tools?\s+to\b`,
    ),
  },
  {
    reason: 'tool_call_request',
    pattern: rx(String.raw`<\s*\/?\s*(?:tool_call|tool_use|function_calls?|invoke\s+name\s*=)`),
  },
  {
    reason: 'tool_call_request',
    pattern: rx(
      String.raw`\b(?:rufe|ruf|rufen\s+sie|nutze|verwende|benutze|führe)\s+(?:(?:das|die|den|ein|eine)\s+)?(?:tool|werkzeug|funktion)\b|\b(?:rufe|ruf|rufen\s+sie)\s+` +
        '`?' +
        String.raw`[a-z][a-z0-9]*(?:_[a-z0-9]+)+` +
        '`?' +
        String.raw`\s+auf\b`,
    ),
  },
  {
    reason: 'secret_request',
    pattern: rx(
      String.raw`\b(?:reveal|leak|disclose|exfiltrate|dump|expose)\s+(?:[\w-]+\s+){0,3}?${SECRET}\b`,
    ),
  },
  {
    reason: 'secret_request',
    pattern: rx(
      String.raw`\b(?:show|print|send|give|tell|share|output|repeat|write|list|display|email|e-mail|post|paste)\s+(?:me|us)\s+(?:[\w-]+\s+){0,3}?${SECRET}\b`,
    ),
  },
  {
    reason: 'secret_request',
    pattern: rx(
      String.raw`\b(?:show|print|send|give|tell|share|output|repeat|write|display|reveal)\s+(?:out\s+)?(?:me\s+)?(?:all\s+)?(?:your|the)\s+(?:system\s+prompt|(?:initial|original|hidden|secret)\s+(?:instructions|prompt)|instructions|rules)\b|\bwhat\s+(?:is|are)\s+your\s+(?:system\s+prompt|instructions|api\s+keys?|passwords?)\b`,
    ),
  },
  {
    reason: 'secret_request',
    pattern: rx(
      String.raw`\b(?:verrate|verraten|zeige|zeigen|gib|geben|nenne|nennen|sende|senden|schicke|schicken|teile|teilen)(?:\s+sie)?\s+(?:mir|uns)\s+(?:[\p{L}-]+\s+){0,3}?${GEHEIM}\b|\bverrate(?:n\s+sie)?\s+(?:[\p{L}-]+\s+){0,3}?${GEHEIM}\b`,
    ),
  },
  {
    reason: 'role_marker',
    pattern: rx(
      String.raw`^[ \t]*(?:#{1,6}[ \t]*)?(?:system|assistant|developer|human)(?:[ \t]+(?:prompt|message|instructions?))?[ \t]*:`,
      'gimu',
    ),
  },
  {
    reason: 'role_marker',
    pattern: rx(
      String.raw`<\|[a-z_]{2,20}\|>|\[\/?inst\]|<<\/?sys>>|<\s*\/?\s*(?:system|system_prompt|instructions?)\s*>`,
    ),
  },
  {
    reason: 'role_marker',
    pattern: rx(
      String.raw`^[ \t]*\[(?:system|assistant|admin|developer)\]|^[ \t]*#{2,}[ \t]*(?:instruction|system|response)[ \t]*:`,
      'gimu',
    ),
  },
];
